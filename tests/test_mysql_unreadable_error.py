"""A MySQL server whose refusal mysqlclient cannot decode (it asks for a clear-text plugin, and the message
quoting it is not UTF-8) is refused with the clear-text message; no web or worker process crashes (SIGSEGV).

A crash would end the test process itself, so the probe and the target check API run in processes of their own:
the probe in a Python subprocess, the API in a gunicorn of this test's own.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from campaigns import roles, services
from campaigns.probes import mysql_error_parts
from tests.factories import TargetFactory
from tests.helpers.fake_servers import FakeMysqlUnreadablePlugin, fake_server
from tests.helpers.users import make_user

ROOT = Path(__file__).resolve().parent.parent
SECRET = "Stolen-If-Seen-5010"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow  # a fake server and a fresh process: 1.2 s
def test_the_probe_refuses_the_server_in_clear_words_and_its_process_lives_on():
    script = textwrap.dedent(f"""
        import django, sys
        django.setup()
        from campaigns.probes import ProbeError, connection_verify
        from campaigns.server_status import StatusReader
        from campaigns.sysbench.command import Connection
        conn = Connection(driver="mysql", host="127.0.0.1", port=int(sys.argv[1]), database="sbtest", user="u",
                          password={SECRET!r})
        for probe in (connection_verify, StatusReader):
            try:
                probe(conn)
            except ProbeError as exc:
                print("refused:", exc, flush=True)
    """)
    with fake_server(FakeMysqlUnreadablePlugin) as server:
        done = subprocess.run([sys.executable, "-c", script, str(server.port)], cwd=ROOT, capture_output=True,
                              text=True, timeout=60, env={**os.environ, "DJANGO_SETTINGS_MODULE": "benchapp.settings"})
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # -11 was SIGSEGV
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all("asked for the password in clear text" in line for line in lines), lines
    assert SECRET not in done.stdout + done.stderr and SECRET.encode() not in server.received()


def test_an_ordinary_mysql_error_keeps_its_message():
    import MySQLdb

    with pytest.raises(MySQLdb.Error) as refused:
        MySQLdb.connect(host="127.0.0.1", port=_free_port(), user="u", connect_timeout=5)
    code, text = mysql_error_parts(refused.value)
    assert code == 2002 and "Can't connect to server on '127.0.0.1'" in text


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_target_check_api_answers_the_refusal_without_its_web_process_crashing(test_db_name, tmp_path):
    token = services.token_issue(user=make_user(roles.OPERATOR))
    port = _free_port()
    log_path = tmp_path / "gunicorn.log"
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{test_db_name}", "DB_CONN_MAX_AGE": "0",
           "DJANGO_SETTINGS_MODULE": "benchapp.settings"}
    with fake_server(FakeMysqlUnreadablePlugin) as server, open(log_path, "wb") as log:
        target = TargetFactory(password=SECRET, port=server.port)
        web = subprocess.Popen([sys.executable, "-m", "gunicorn", "benchapp.wsgi", "-b", f"127.0.0.1:{port}",
                                "-w", "1", "--timeout", "120"], cwd=ROOT, env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 90
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert web.poll() is None and time.monotonic() < deadline, log_path.read_text()
                    time.sleep(0.3)
            request = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/targets/{target.pk}/check/",
                                             method="POST", headers={"Authorization": f"Token {token}"})
            with pytest.raises(urllib.error.HTTPError) as answer:
                urllib.request.urlopen(request, timeout=60)
            body = answer.value.read().decode()
        finally:
            os.killpg(web.pid, signal.SIGTERM)
            web.wait(timeout=30)
    assert answer.value.code == 400, body
    assert "asked for the password in clear text" in body and SECRET not in body
    text = log_path.read_text(errors="replace")
    assert "SIGSEGV" not in text and "signal 11" not in text, text
