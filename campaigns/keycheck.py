"""The start-up check of the field key against the database.

A missing var/secrets.env is made anew on first start (benchapp/local_secrets.py), with a new BENCHAPP_FIELD_KEY.
On a host where a database was restored without its secrets file, that new key reads none of the target passwords
and webhook URLs: every job then fails with "cannot be decrypted", and the one file that could read them may be
overwritten by then. So web (scripts/gunicorn.conf.py), the worker and beat (campaigns/worker_signals.py) and manage.py's
commands refuse to start when the database holds encrypted values and not one of those sampled decrypts with the
configured keys, naming the file to restore. A few readable values beside unreadable ones is not this: a key
rotated without `manage.py rotate_field_key`, or one row re-entered; the start goes on.
"""
from __future__ import annotations

import logging
import sys

from django.conf import settings
from django.db import DatabaseError

from campaigns.crypto import DecryptionError, decrypt_secret
from campaigns.models import Campaign, Target

log = logging.getLogger(__name__)

# The newest values of each kind: enough to tell the key from a stranger's, one query per table.
SAMPLE = 20
ENCRYPTED = ((Target, "password_encrypted"), (Campaign, "webhook_url_encrypted"))


class FieldKeyMismatch(Exception):
    """The configured field key reads none of the database's encrypted values."""


def _sample() -> list[str]:
    tokens: list[str] = []
    for model, field in ENCRYPTED:
        tokens += model.objects.exclude(**{field: ""}).order_by("-pk").values_list(field, flat=True)[:SAMPLE]
    return tokens


def mismatch_message(*, unreadable: int) -> str:
    path = settings.BENCHAPP_SECRETS_PATH
    made = (f"{path} was made just now, with a new BENCHAPP_FIELD_KEY" if settings.BENCHAPP_FIELD_KEY_MADE_NOW
            else f"the BENCHAPP_FIELD_KEY of {path} (or BENCHAPP_FIELD_KEYS) is not the one they were written with")
    return (f"benchapp will not start: the database holds encrypted target passwords or webhook URLs ({unreadable} "
            f"sampled, none readable) and {made}. Restore {path} from the backup taken with this database "
            "(docs/operations.md, \"Backups and restore\"), or give the old key in BENCHAPP_FIELD_KEYS, then start "
            "again. Nothing was changed.")


def field_key_check() -> None:
    """Raises FieldKeyMismatch when the database's encrypted values exist and none decrypts. A database that cannot
    be read (down, or not migrated yet) is not checked: the start goes on, and its own checks say what is wrong."""
    try:
        tokens = _sample()
    except DatabaseError as exc:
        log.info("field key not checked against the database: %s", type(exc).__name__)
        return
    if not tokens:
        return
    for token in tokens:
        try:
            decrypt_secret(token)
            return
        except DecryptionError:
            continue
    raise FieldKeyMismatch(mismatch_message(unreadable=len(tokens)))


# The exit status of a start refused for its key: sysexits' EX_CONFIG, which the systemd units do not restart on
# (RestartPreventExitStatus), since a restart cannot bring the file back.
EXIT_KEY_MISMATCH = 78


def start_refused_unless_key_reads() -> None:
    """For a process that is starting (web, worker, beat, manage.py): exits with the message when the key reads none
    of the database's encrypted values. Its database connection is closed either way: a gunicorn master that preloads
    the application must not hand one connection to every worker it forks."""
    from django.db import connections

    try:
        field_key_check()
    except FieldKeyMismatch as exc:
        log.critical("%s", exc)
        sys.stderr.write(f"{exc}\n")
        sys.stderr.flush()
        raise SystemExit(EXIT_KEY_MISMATCH) from None
    finally:
        connections.close_all()
