from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("campaigns", "0036_samples_notes_host_others"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="name",
            field=models.CharField(blank=True, help_text="what its owner calls it, e.g. nightly CI", max_length=100),
        ),
    ]
