"""A client host's labels are the server's to give: kept with its credentials."""
import django.contrib.postgres.fields
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0067_hostaccess_redis_password_sha256")]

    operations = [
        migrations.AddField(model_name="hostaccess", name="labels",
                            field=django.contrib.postgres.fields.ArrayField(
                                base_field=models.CharField(max_length=100), blank=True, default=list, size=None)),
    ]
