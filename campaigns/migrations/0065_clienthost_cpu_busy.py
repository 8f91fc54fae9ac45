"""A client host's CPU busy share between its last two heartbeats: the quiet check before a job measures reads it
for every client host of the job, not only the coordinating one."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0064_job_order_counterbalanced")]

    operations = [
        migrations.AddField(model_name="clienthost", name="cpu_busy_pct", field=models.FloatField(blank=True, null=True)),
        migrations.AddField(model_name="clienthost", name="cpu_busy_from",
                            field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(model_name="clienthost", name="cpu_busy_to",
                            field=models.DateTimeField(blank=True, null=True)),
    ]
