"""A host taken offline keeps the time it really beat: offline_since says benchapp took it off."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0069_job_server_work")]

    operations = [
        migrations.AddField(model_name="clienthost", name="offline_since",
                            field=models.DateTimeField(blank=True, null=True)),
    ]
