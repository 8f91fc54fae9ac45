"""Each installation's own keys: generated once into a 0600 file, refused outside DEBUG when they
are the values the repository used to ship, and rotated with `manage.py rotate_field_key`."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from benchapp import local_secrets
from campaigns.crypto import DecryptionError, decrypt_secret, encrypt_secret, fernet
from campaigns.models import Target
from tests.factories import TargetFactory

# Most of these start fresh Python processes (about 0.6 s each, 5 s for the module): make test runs them.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
# The settings module alone: the keys are read, generated and checked when it is imported (django.setup() would add
# a second of importing every app to each of these processes, and check nothing more).
PRINT = "import benchapp.settings as s; print(s.SECRET_KEY, s.FIELD_ENCRYPTION_KEYS[0], s.BENCHAPP_ADMIN_PASSWORD)"


def _settings_in_a_fresh_process(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("SECRET_KEY", "BENCHAPP_FIELD_KEY", "BENCHAPP_FIELD_KEYS", "BENCHAPP_ADMIN_PASSWORD",
                          "DEBUG")}
    return subprocess.run([sys.executable, "-c", PRINT], cwd=ROOT, env={**clean, **env}, capture_output=True,
                          text=True, timeout=60)


def test_the_first_start_makes_the_installations_own_secrets_in_a_0600_file_and_reuses_them(tmp_path):
    path = tmp_path / "var" / "secrets.env"
    first = _settings_in_a_fresh_process({"BENCHAPP_SECRETS_FILE": str(path)})
    assert first.returncode == 0, first.stderr
    secret_key, field_key, admin_password = first.stdout.split()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(secret_key) >= 50 and len(field_key) >= 32 and len(admin_password) >= 12
    assert local_secrets.DEVELOPMENT_SECRET_KEY != secret_key
    assert local_secrets.DEVELOPMENT_FIELD_KEY != field_key and admin_password != "benchapp-admin"
    again = _settings_in_a_fresh_process({"BENCHAPP_SECRETS_FILE": str(path)})
    assert again.stdout.split() == [secret_key, field_key, admin_password]
    # An environment variable wins over the file.
    chosen = _settings_in_a_fresh_process({"BENCHAPP_SECRETS_FILE": str(path), "SECRET_KEY": "x" * 60})
    assert chosen.stdout.split()[0] == "x" * 60


def test_a_client_hosts_worker_writes_no_secrets_file_and_holds_no_field_key(tmp_path):
    """A client host opens only the passwords sealed for it (campaigns.sealing): a field key in its environment, or
    in a secrets file it can read, is not used; its own is made in memory and decrypts nothing of the server's."""
    path = tmp_path / "secrets.env"
    client = {"BENCHAPP_SECRETS_FILE": str(path), "BENCHAPP_WORKER_ROLE": "client"}
    done = _settings_in_a_fresh_process({**client, "BENCHAPP_FIELD_KEY": "the-servers-key"})
    assert done.returncode == 0, done.stderr
    secret_key, field_key, _ = done.stdout.split()
    assert field_key != "the-servers-key" and len(field_key) >= 32 and len(secret_key) >= 50
    assert not path.exists()
    path.write_text("BENCHAPP_FIELD_KEY=the-servers-key-in-a-file\n")
    again = _settings_in_a_fresh_process(client)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split()[1] not in ("the-servers-key-in-a-file", field_key)


@pytest.mark.parametrize(("name", "value"), [("SECRET_KEY", local_secrets.DEVELOPMENT_SECRET_KEY),
                                             ("BENCHAPP_FIELD_KEY", local_secrets.DEVELOPMENT_FIELD_KEY),
                                             # docker-compose.yml's former defaults
                                             ("SECRET_KEY", "insecure-dev-secret-key-change-me"),
                                             ("BENCHAPP_FIELD_KEY", "insecure-dev-field-key-change-me")])
def test_outside_debug_the_published_development_values_are_refused(tmp_path, name, value):
    done = _settings_in_a_fresh_process({"BENCHAPP_SECRETS_FILE": str(tmp_path / "s.env"), name: value})
    assert done.returncode != 0 and "ImproperlyConfigured" in done.stderr and name in done.stderr
    assert "development value" in done.stderr
    allowed = _settings_in_a_fresh_process({"BENCHAPP_SECRETS_FILE": str(tmp_path / "s.env"), name: value,
                                            "DEBUG": "true"})
    assert allowed.returncode == 0, allowed.stderr


@pytest.mark.django_db
def test_rotation_re_encrypts_old_and_development_key_rows_with_the_first_key(settings):
    settings.FIELD_ENCRYPTION_KEYS = ["old-key"]
    old = TargetFactory(password="secret-old")
    legacy = TargetFactory()
    Target.objects.filter(pk=legacy.pk).update(
        password_encrypted=fernet(local_secrets.DEVELOPMENT_FIELD_KEY).encrypt(b"secret-legacy").decode())
    settings.FIELD_ENCRYPTION_KEYS = ["new-key", "old-key"]
    assert decrypt_secret(Target.objects.get(pk=old.pk).password_encrypted) == "secret-old"  # still read
    call_command("rotate_field_key")
    settings.FIELD_ENCRYPTION_KEYS, settings.FIELD_DECRYPTION_ONLY_KEYS = ["new-key"], []
    assert decrypt_secret(Target.objects.get(pk=old.pk).password_encrypted) == "secret-old"
    assert decrypt_secret(Target.objects.get(pk=legacy.pk).password_encrypted) == "secret-legacy"
    settings.FIELD_ENCRYPTION_KEYS = ["old-key"]
    with pytest.raises(DecryptionError):
        decrypt_secret(Target.objects.get(pk=old.pk).password_encrypted)


@pytest.mark.django_db
def test_rotation_names_the_rows_no_key_can_read_and_changes_nothing_else(settings):
    settings.FIELD_ENCRYPTION_KEYS = ["lost-key"]
    lost = TargetFactory(password="gone")
    settings.FIELD_ENCRYPTION_KEYS = ["new-key"]
    kept = TargetFactory(password="kept")
    before = Target.objects.get(pk=lost.pk).password_encrypted
    with pytest.raises(CommandError, match=f"Target #{lost.pk}"):
        call_command("rotate_field_key")
    assert Target.objects.get(pk=lost.pk).password_encrypted == before
    assert decrypt_secret(Target.objects.get(pk=kept.pk).password_encrypted) == "kept"
    assert encrypt_secret("") == ""


def test_docker_compose_gives_no_public_secret_and_shares_the_generated_ones():
    compose = (ROOT / "docker-compose.yml").read_text()
    for value in (*local_secrets.PUBLIC_SECRET_KEYS, *local_secrets.PUBLIC_FIELD_KEYS):
        assert value not in compose
    assert "SECRET_KEY: ${SECRET_KEY:-}" in compose and "BENCHAPP_FIELD_KEY: ${BENCHAPP_FIELD_KEY:-}" in compose
    assert compose.count("- secrets:/app/var") == 4  # the service `secrets` makes them; web, worker and beat read them
