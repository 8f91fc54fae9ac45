"""The SHA-256 of a client host's Redis password, as Redis's ACL keeps it: the server gives the user back after a Redis
restart or an upgrade of its rules."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0066_jobclient_remeasure_cause")]

    operations = [
        migrations.AddField(model_name="hostaccess", name="redis_password_sha256",
                            field=models.CharField(blank=True, max_length=64)),
    ]
