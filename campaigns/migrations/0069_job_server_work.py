"""The target server's work counter as benchapp's server read it when a job started and closed: what a client host
reports is checked against it (a column the host may not write)."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0068_hostaccess_labels")]

    operations = [
        migrations.AddField(
            model_name="job", name="server_work",
            field=models.JSONField(blank=True, default=dict,
                                   help_text="{driver, before, after}: the target server's work counter, read by "
                                             "benchapp's server as the job started and as it closed")),
    ]
