"""A client host's own request that its job be measured again, on its client row: the server's re-measure task acts
only on such a request."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0065_clienthost_cpu_busy")]

    operations = [
        migrations.AddField(model_name="jobclient", name="remeasure_cause", field=models.TextField(blank=True)),
    ]
