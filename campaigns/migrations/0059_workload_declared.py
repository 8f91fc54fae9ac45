from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0058_packed_step")]

    operations = [
        migrations.AddField("workload", "size_option", models.CharField(
            blank=True, default="", max_length=60, help_text="the option that takes the dataset's size, e.g. scale")),
        migrations.AddField("workload", "size_unit", models.CharField(
            blank=True, default="", max_length=40,
            help_text="what the dataset's size counts, e.g. warehouses (rows when empty)")),
        migrations.AddField("workload", "counted_function", models.CharField(
            blank=True, default="", max_length=60,
            help_text="a global Lua function whose completed calls are counted, e.g. new_order")),
        migrations.AddField("workload", "counted_label", models.CharField(
            blank=True, default="", max_length=40, help_text="what those calls are called, e.g. NewOrders")),
        migrations.AddField("workload", "check_command", models.CharField(
            blank=True, default="", max_length=60,
            help_text="a command of the script run after each job, e.g. check")),
        migrations.AddField("jobresult", "counted", models.BigIntegerField(
            blank=True, null=True, help_text="calls of the workload's counted function that ended without an error")),
        migrations.AddField("jobresult", "counted_per_min", models.FloatField(
            blank=True, null=True, help_text="those calls per minute of the run")),
        migrations.AddField("job", "check_outcome", models.CharField(
            blank=True, default="", max_length=10,
            choices=[("", "not run"), ("passed", "Passed"), ("failed", "Failed"), ("not_run", "could not run")])),
        migrations.AddField("job", "check_output", models.TextField(blank=True, default="")),
    ]
