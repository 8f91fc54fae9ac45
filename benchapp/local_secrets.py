"""The secrets of one installation, generated on first start into a 0600 file outside git.

`make run` used to start with a public SECRET_KEY, field key and admin password from the repository: a stolen
database dump then decrypted every target password with a key anyone could read. Now each installation makes its
own on first start, in var/secrets.env (or BENCHAPP_SECRETS_FILE), readable by its owner only, and uses them from
then on. An environment variable of the same name always wins (deployments set them). Client hosts decrypt target
passwords, so they need the same BENCHAPP_FIELD_KEY (README: "Keys").
"""
from __future__ import annotations

import fcntl
import os
import secrets
from pathlib import Path

# The values the repository used to ship: never accepted outside DEBUG, and the old field key is kept only to
# decrypt (and re-encrypt, with `manage.py rotate_field_key`) rows written with it.
DEVELOPMENT_SECRET_KEY = "benchapp-insecure-development-key-change-me-0123456789"
DEVELOPMENT_FIELD_KEY = "benchapp-development-field-key"
DEVELOPMENT_ADMIN_PASSWORD = "benchapp-admin"
# The defaults docker-compose.yml used to give: as public as the ones above.
COMPOSE_SECRET_KEY = "insecure-dev-secret-key-change-me"
COMPOSE_FIELD_KEY = "insecure-dev-field-key-change-me"
PUBLIC_SECRET_KEYS = (DEVELOPMENT_SECRET_KEY, COMPOSE_SECRET_KEY)
PUBLIC_FIELD_KEYS = (DEVELOPMENT_FIELD_KEY, COMPOSE_FIELD_KEY)

GENERATED = {
    "SECRET_KEY": lambda: secrets.token_urlsafe(50),
    "BENCHAPP_FIELD_KEY": lambda: secrets.token_urlsafe(32),
    "BENCHAPP_ADMIN_PASSWORD": lambda: secrets.token_urlsafe(12),
    # Redis's requirepass: scripts/setup.sh makes this file first (scripts/redis-password.sh) and gives the password
    # to Redis; every process reads it from here (settings.REDIS_URL). URL-safe, so it goes into a URL as it is.
    "BENCHAPP_REDIS_PASSWORD": lambda: secrets.token_urlsafe(24),
}


# The names this process generated (rather than read from the file or another process's write): a field key made now
# over a database of encrypted values means the file was lost (campaigns/keycheck.py refuses to start then).
MADE_NOW: set[str] = set()


def read_env_file(path: Path) -> dict[str, str]:
    """NAME=value lines of a file (comments and other lines skipped), as this module writes them."""
    return _read(path)


def _read(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        name, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith("#"):
            values[name.strip()] = value.strip()
    return values


def local_secrets(path: Path, *, write: bool = True) -> dict[str, str]:
    """The file's secrets, written first with fresh values for any it lacks (mode 0600, written whole).

    With write=False (a client host's worker) nothing is written: the file is read if there is one, and what it
    lacks is made for this process only."""
    if not write:
        values = _read(path) if os.access(path, os.R_OK) else {}
        return {**{name: make() for name, make in GENERATED.items() if not values.get(name)}, **values}
    values = _read(path) if path.exists() else {}
    missing = {name: make() for name, make in GENERATED.items() if not values.get(name)}
    if missing and path.exists():
        return _add_missing(path)
    if missing:
        values.update(missing)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write("# benchapp's own secrets, made on first start; keep this file (0600), never commit it.\n")
            out.writelines(f"{name}={value}\n" for name, value in values.items())
        try:
            os.link(temporary, path)  # the first process to start wins; the others read what it wrote
            MADE_NOW.update(missing)
        except FileExistsError:
            values = {**_read(path), **{k: v for k, v in values.items() if k not in _read(path)}}
        finally:
            temporary.unlink()
    # Not when it is 0600 already: a read-only mount (deploy/compose/production.yml's web, worker and beat) refuses
    # even a chmod that changes nothing.
    if path.stat().st_mode & 0o777 != 0o600:
        os.chmod(path, 0o600)
    return values


def _add_missing(path: Path) -> dict[str, str]:
    """A file of an older version (or one another tool wrote) lacks some secrets: they are added to it, under a lock,
    so that two processes starting at once agree on the values (the second reads what the first wrote)."""
    with open(path, "r+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        values = _read(path)
        missing = {name: make() for name, make in GENERATED.items() if not values.get(name)}
        if missing:
            held.seek(0, os.SEEK_END)
            if held.tell() and not path.read_text().endswith("\n"):
                held.write("\n")
            held.writelines(f"{name}={value}\n" for name, value in missing.items())
            values.update(missing)
            MADE_NOW.update(missing)
    os.chmod(path, 0o600)
    return values


def has_secret(path: Path, name: str) -> bool:
    """Whether NAME comes from the environment or the file, rather than made for this process only."""
    return bool(os.environ.get(name)) or (os.access(path, os.R_OK) and bool(_read(path).get(name)))


def secret(values: dict[str, str], name: str) -> str:
    """An environment variable of that name, else the installation's own value."""
    return os.environ.get(name) or values[name]
