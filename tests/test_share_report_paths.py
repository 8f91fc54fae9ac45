"""A shared report's commands say which script ran, not where a host keeps it: the client host's
workload cache (…/var/workloads/<hash>/orders.lua), the checkout's Lua scripts and sysbench's own path are cut to
their file names, and the logged-in report keeps them whole."""
from __future__ import annotations

import html

import pytest
from django.test import Client

from campaigns import roles
from campaigns.api.throttling import throttle_reset
from campaigns.models import Job
from tests.helpers.users import make_user
from tests.helpers.worlds import make_world, share_link_create, share_link_url

pytestmark = pytest.mark.django_db

CACHE = "/srv/loadgen-install-5e1b/var/workloads/9f2c4e7a1b3d5f60"
CHECKOUT = "/home/bench-9a7c/benchapp/campaigns/sysbench/lua"


def test_a_shared_report_shows_workload_and_script_file_names_without_their_install_paths():
    throttle_reset()
    world = make_world()
    # The report shows one command per product: one workload from a client host's cache, one script of a checkout.
    first = world["targets"][0]
    for job in Job.objects.filter(run=world["run"]):
        script = f"{CACHE}/orders.lua" if job.target == first else f"{CHECKOUT}/oltp_legacy_rw.lua"
        job.command_line = job.command_line.replace("sysbench oltp_point_select",
                                                    f"/opt/sysbench-1.0.20/bin/sysbench '{script}'", 1)
        job.save(update_fields=["command_line"])
    operator = Client()
    operator.force_login(make_user(roles.OPERATOR, "paths-operator"))
    own = operator.get(f"/compare/report/?{world['query']}").content.decode()
    assert f"{CACHE}/orders.lua" in own and f"{CHECKOUT}/oltp_legacy_rw.lua" in own  # the paths really are there

    url = share_link_url(share_link_create(operator, world["query"], shows="report"))
    shown = html.unescape(Client().get(url).content.decode())
    assert CACHE not in shown and CHECKOUT not in shown and "/opt/sysbench" not in shown
    assert "sysbench orders.lua " in shown and "sysbench oltp_legacy_rw.lua " in shown
    assert "--threads=8" in shown and "--mysql-host=***" in shown  # the rest of the command stays readable
    throttle_reset()


@pytest.mark.parametrize(("command", "shown"), [
    ("/usr/bin/sysbench /var/lib/benchapp/workloads/ab12/orders.lua --threads=8 run", "sysbench orders.lua --threads=8 run"),
    ("sysbench '/home/a b/lua/oltp_rw.lua' --report-file=/tmp/x/out.txt run", "sysbench oltp_rw.lua --report-file=out.txt run"),
    ("sysbench oltp_read_write --rate=1/2 run", "sysbench oltp_read_write --rate=1/2 run"),
    ("(imported from run 7.log)", "(imported from run 7.log)"),
    ("sysbench 'unbalanced /root/w/x.lua run", "sysbench 'unbalanced x.lua run"),
])
def test_absolute_paths_in_a_command_are_cut_to_their_file_names(command, shown):
    from campaigns.comparison.redaction import paths_to_names

    assert paths_to_names(command) == shown
