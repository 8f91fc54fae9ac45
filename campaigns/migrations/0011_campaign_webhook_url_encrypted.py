"""The campaign's webhook URL (often a secret Slack URL) is stored encrypted, like target passwords."""
from __future__ import annotations

from typing import Any

from django.db import migrations, models


def encrypt_urls(apps: Any, schema_editor: Any) -> None:
    from campaigns.crypto import encrypt_secret

    Campaign = apps.get_model("campaigns", "Campaign")
    for campaign in Campaign.objects.exclude(webhook_url="").only("pk", "webhook_url"):
        Campaign.objects.filter(pk=campaign.pk).update(webhook_url_encrypted=encrypt_secret(campaign.webhook_url))


def decrypt_urls(apps: Any, schema_editor: Any) -> None:
    from campaigns.crypto import decrypt_secret

    Campaign = apps.get_model("campaigns", "Campaign")
    for campaign in Campaign.objects.exclude(webhook_url_encrypted="").only("pk", "webhook_url_encrypted"):
        Campaign.objects.filter(pk=campaign.pk).update(
            webhook_url=decrypt_secret(campaign.webhook_url_encrypted)[:200])


class Migration(migrations.Migration):

    dependencies = [
        ("campaigns", "0008_run_outcome_phase_queue"),
    ]

    operations = [
        migrations.AddField(
            model_name="campaign",
            name="webhook_url_encrypted",
            field=models.TextField(blank=True, default="", editable=False),
        ),
        migrations.RunPython(encrypt_urls, decrypt_urls),
        migrations.RemoveField(
            model_name="campaign",
            name="webhook_url",
        ),
    ]
