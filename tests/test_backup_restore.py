"""Backups and restore: a fresh secrets file over a database of encrypted values stops the start with a
message naming the file to restore, instead of making a new key that reads nothing."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from campaigns.keycheck import EXIT_KEY_MISMATCH, FieldKeyMismatch, field_key_check
from tests.factories import CampaignFactory, TargetFactory

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.django_db
def test_the_key_check_passes_on_an_empty_database_and_on_values_the_key_reads():
    field_key_check()
    TargetFactory(password="readable-pw")
    field_key_check()


@pytest.mark.django_db
def test_the_key_check_refuses_a_key_that_reads_none_of_the_values(settings):
    TargetFactory(password="pw-of-the-old-key")
    CampaignFactory(webhook_url="https://hooks.example.com/T000/secret-token")
    settings.FIELD_ENCRYPTION_KEYS = ["a-stranger-key"]
    settings.FIELD_DECRYPTION_ONLY_KEYS = []
    with pytest.raises(FieldKeyMismatch, match=r"2 sampled, none readable.*Restore .*secrets\.env from the backup"):
        field_key_check()
    # One value the new key reads (a password re-entered after a rotation) is not a lost file: the start goes on.
    TargetFactory(password="re-entered")
    field_key_check()


def _start_commands() -> dict[str, list[str]]:
    python = sys.executable
    return {
        "manage.py": [python, "manage.py", "showmigrations", "campaigns"],
        "web": [str(ROOT / ".venv" / "bin" / "gunicorn"), "benchapp.wsgi:application", "--config",
                "scripts/gunicorn.conf.py", "--bind", "127.0.0.1:0", "--workers", "1"],
        "worker": [python, "-m", "celery", "-A", "benchapp", "worker", "--pool", "solo", "-Q", "key-check-none",
                   "--without-gossip", "--without-mingle", "--without-heartbeat"],
        "beat": [python, "-m", "celery", "-A", "benchapp", "beat", "--scheduler", "celery.beat:PersistentScheduler"],
    }


@pytest.mark.slow  # a fresh Django (or Celery) process per start: 2-4 s each
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("process", ["manage.py", "web", "worker", "beat"])
def test_a_fresh_secrets_file_over_an_encrypted_database_stops_the_start(process, test_db_name, tmp_path):
    TargetFactory(password="only-the-old-key-reads-me")
    fresh = tmp_path / "secrets.env"  # a restore onto a new host without var/secrets.env
    env = {k: v for k, v in os.environ.items() if k not in ("BENCHAPP_FIELD_KEY", "BENCHAPP_FIELD_KEYS")}
    env.update({"BENCHAPP_SECRETS_FILE": str(fresh), "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{test_db_name}",
                "DJANGO_SETTINGS_MODULE": "benchapp.settings", "BENCHAPP_LOG_FORMAT": "text"})
    argv = _start_commands()[process]
    if process == "beat":
        argv += ["--schedule", str(tmp_path / "beat-schedule")]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=90)
    assert done.returncode == EXIT_KEY_MISMATCH, done.stdout + done.stderr
    assert f"{fresh} was made just now, with a new BENCHAPP_FIELD_KEY" in done.stderr
    assert f"Restore {fresh} from the backup taken with this database" in done.stderr
    assert "only-the-old-key-reads-me" not in done.stdout + done.stderr


@pytest.mark.django_db
def test_the_restore_drills_command_says_whether_the_key_reads_the_dump(settings, capsys):
    from django.core.management import CommandError, call_command

    TargetFactory(password="pw-of-the-dump")
    call_command("field_key_check")
    assert "reads the stored secrets" in capsys.readouterr().out
    settings.FIELD_ENCRYPTION_KEYS = ["another-installations-key"]
    settings.FIELD_DECRYPTION_ONLY_KEYS = []
    with pytest.raises(CommandError, match="Restore .*secrets.env"):
        call_command("field_key_check")
