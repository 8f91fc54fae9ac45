"""benchapp's own PostgreSQL login where the cluster does not trust loopback (scripts/pg-login.sh, from
scripts/setup.sh): nothing is loosened in pg_hba.conf; benchapp gets a role of its own with a generated password
in the secrets file, and migrates and runs as it. Checked on a cluster of the test's own (scram-sha-256 over TCP,
peer on the socket, as Debian makes one): the machine's shared cluster trusts loopback, and stays as it is."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers.servers import PostgresServer, free_port

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="the socket as the OS user postgres needs root")]


def _pg_login(server: PostgresServer, secrets: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ROOT / "scripts" / "pg-login.sh"), "--port", str(server.port),
                           "--socket-dir", str(server.datadir)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "BENCHAPP_SECRETS_FILE": str(secrets)})


def _values(secrets: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in secrets.read_text().splitlines() if "=" in line)


@pytest.mark.integration
def test_a_cluster_without_trust_gets_benchapps_own_role_and_no_trust_line(tmp_path):
    server = PostgresServer(free_port(), auth_host="scram-sha-256")
    try:
        hba = (server.datadir / "pg_hba.conf").read_bytes()
        secrets = tmp_path / "secrets.env"
        secrets.write_text("SECRET_KEY=x\n")
        secrets.chmod(0o600)
        first = _pg_login(server, secrets)
        assert first.returncode == 0, first.stderr
        assert first.stdout.startswith("role benchapp"), first.stdout
        values = _values(secrets)
        password = values["BENCHAPP_DB_PASSWORD"]
        assert values["DATABASE_URL"] == f"postgres://benchapp:{password}@127.0.0.1:{server.port}/benchapp"
        assert (server.datadir / "pg_hba.conf").read_bytes() == hba
        assert secrets.stat().st_mode & 0o777 == 0o600
        # Still no login without a password, as postgres or anyone.
        refused = subprocess.run(["psql", "-X", "-w", "-h", "127.0.0.1", "-p", str(server.port), "-U", "postgres",
                                  "-d", "postgres", "-c", "select 1"], capture_output=True, text=True, timeout=30)
        assert refused.returncode != 0 and "password" in refused.stderr, refused.stderr
        # The role is not a superuser.
        assert server.sql("select rolsuper, rolcreaterole from pg_roles where rolname = 'benchapp'").stdout.strip() \
            == "f|t"
        again = _pg_login(server, secrets)
        assert again.returncode == 0, again.stderr
        assert _values(secrets)["BENCHAPP_DB_PASSWORD"] == password
        assert secrets.read_text().count("DATABASE_URL=") == 1
        # benchapp migrates and answers as that role, with the URL from the secrets file alone.
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "BENCHAPP_TEST_DB_NAME")}
        env.update({"BENCHAPP_SECRETS_FILE": str(secrets), "DB_CONN_MAX_AGE": "0"})
        migrated = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=600)
        assert migrated.returncode == 0, migrated.stdout[-2000:] + migrated.stderr[-3000:]
        who = subprocess.run([sys.executable, "manage.py", "shell", "-c",
                              "from django.db import connection; from campaigns.services.client_access import "
                              "client_access_grantable as g; c = connection.cursor(); "
                              "c.execute('select current_user'); print(c.fetchone()[0], g())"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert who.returncode == 0, who.stderr[-2000:]
        assert who.stdout.split()[-2:] == ["benchapp", "True"], who.stdout
        assert password not in migrated.stdout + migrated.stderr + who.stdout + who.stderr
    finally:
        server.stop()
