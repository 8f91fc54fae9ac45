"""The JSON lists of earlier attempts and sends go: they are rows since 0053."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("campaigns", "0053_attempt_rows"),
    ]

    operations = [
        migrations.RemoveField(model_name="job", name="earlier_attempts"),
        migrations.RemoveField(model_name="jobclient", name="earlier_attempts"),
    ]
