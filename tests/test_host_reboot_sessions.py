"""A client host that vanishes without closing its connections (a reboot, a pulled cable) frees its PostgreSQL
sessions within minutes, not the kernel's two hours: its role carries server-side TCP keepalives
(campaigns.services.client_access.ROLE_SETTINGS). The attack's finding: seven idle sessions of one reboot still there
24 minutes later, a few reboots of a few hosts filling max_connections.

The host is a network namespace on a bridge of its own; the PostgreSQL cluster (the test's own) listens on the
bridge's address, so its backends face the host's sockets themselves (no forwarder in between keeps them alive).
The "reboot": the link goes down, the host's processes are killed and its namespace deleted, so that no FIN or RST
ever reaches the server."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from campaigns.services.client_access import ROLE_SETTINGS
from tests.conftest import record_measurement
from tests.helpers.namespaces import Lab, Namespace, NetnsUnavailable, ip
from tests.helpers.servers import PostgresServer, free_port
from tests.helpers.waiting import wait_for

HOLD = """
import sys, time, psycopg
conns = [psycopg.connect(host=sys.argv[1], port=int(sys.argv[2]), user="bh_reboot", dbname="postgres",
                         connect_timeout=5) for _ in range(3)]
print("connected", flush=True)
time.sleep(3600)
"""


@pytest.mark.integration
@pytest.mark.timeout(420)  # the set-up, then up to 300 s of waiting: the wait's own message, not pytest-timeout's
def test_a_client_host_that_reboots_leaves_no_session_after_five_minutes():
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    lab = Lab(prefix="bhr", subnet_base="10.214", ports=())
    try:
        lab.open()
        host = Namespace(lab, 0)
    except (NetnsUnavailable, OSError, subprocess.SubprocessError) as exc:
        lab.close()
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"network namespaces could not be created (CI=true): {exc}")
        pytest.skip(f"network namespaces cannot be created here: {exc}")
    server = None
    holder = None
    try:
        server = PostgresServer(free_port(), options=(f"listen_addresses=127.0.0.1,{lab.address}",))
        with open(server.datadir / "pg_hba.conf", "a") as hba:
            hba.write(f"host all bh_reboot {lab.subnet}.0/24 trust\n")
        assert server.sql("SELECT pg_reload_conf()").returncode == 0
        # The role as client_host_issue makes one: its keepalives are benchapp's own.
        settings_sql = "; ".join(f"ALTER ROLE bh_reboot SET {name} = {value}" for name, value in ROLE_SETTINGS.items())
        made = server.sql(f"CREATE ROLE bh_reboot LOGIN; {settings_sql}")
        assert made.returncode == 0, made.stderr
        holder = subprocess.Popen(["ip", "netns", "exec", host.netns, sys.executable, "-c", HOLD, lab.address,
                                   str(server.port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def sessions() -> int:
            done = server.sql("SELECT count(*) FROM pg_stat_activity WHERE usename = 'bh_reboot'")
            return int(done.stdout.strip() or -1)

        wait_for(lambda: sessions() == 3 or holder.poll() is not None, timeout_s=30, what="the host's 3 sessions")
        assert holder.poll() is None, holder.stderr.read() if holder.stderr else ""
        # The reboot: nothing the host does from now on reaches the server.
        host.link_down()
        holder.kill()
        holder.wait(timeout=10)
        ip("netns", "del", host.netns)
        gone_at = time.monotonic()
        assert sessions() == 3  # the server knows nothing yet
        wait_for(lambda: sessions() == 0, timeout_s=300, interval_s=2,
                 what="the vanished host's sessions to end (server-side TCP keepalives)")
        freed_s = time.monotonic() - gone_at
        record_measurement(f"a rebooted client host's 3 idle sessions ended {freed_s:.0f} s after it vanished "
                           f"(role keepalives {ROLE_SETTINGS})")
        assert freed_s < 300
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
        if server is not None:
            server.stop()
        lab.close()
