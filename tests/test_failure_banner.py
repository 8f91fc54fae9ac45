"""Failure and cancel: the cause at the top of the run and job pages with "Edit target" and "Test
connection", a confirmation before cancel, retry labels that tell failed from cancelled, and wait reasons cleared
once a job has ended."""
from __future__ import annotations

import re
import socket

import pytest
from django.test import Client
from django.utils.html import escape

from campaigns import roles
from campaigns.execution import transitions
from campaigns.models import Job, JobResult, Run
from tests.factories import TargetFactory
from tests.helpers.measured import REFUSED, add_samples, failed_run
from tests.helpers.users import make_user

pytestmark = pytest.mark.django_db

SHOWN = escape(REFUSED)




def _page(role: str, url: str) -> str:
    client = Client()
    client.force_login(make_user(role, f"failure-{role}"))
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_run_page_opens_with_the_cause_the_target_to_fix_and_a_retry_that_counts_failed_and_cancelled():
    run = failed_run([(Job.Status.SUCCEEDED, ""), (Job.Status.FAILED, REFUSED + "\nTraceback …"),
                (Job.Status.FAILED, REFUSED), (Job.Status.CANCELLED, "cancelled before it started")],
               run_status=Run.Status.PARTIALLY_SUCCEEDED)
    target = run.jobs.first().target
    html = _page(roles.OPERATOR, f"/runs/{run.pk}/")
    banner = re.search(r'data-testid="failure-banner">(.*?)</div>', html, re.S).group(1)
    # At the top: before the progress card and the jobs table.
    assert html.index('data-testid="failure-banner"') < html.index('id="run-progress"')
    assert "2 of 4 jobs failed, 1 cancelled." in banner and SHOWN in banner and "Traceback" not in banner
    assert f'href="/targets/{target.pk}/edit/" data-testid="edit-target">Edit target</a>' in banner
    assert f'action="/targets/{target.pk}/check/"' in banner and "Test connection</button>" in banner
    assert ">Retry 2 failed and 1 cancelled jobs</button>" in html
    # A viewer reads the cause but gets no buttons.
    viewer = _page(roles.VIEWER, f"/runs/{run.pk}/")
    assert SHOWN in viewer and 'data-testid="edit-target"' not in viewer


@pytest.mark.parametrize(("statuses", "label"), [
    ([Job.Status.CANCELLED, Job.Status.CANCELLED], "Retry 2 cancelled jobs"),
    ([Job.Status.FAILED], "Retry 1 failed job"),
])
def test_the_retry_label_says_failed_or_cancelled_as_they_are(statuses, label):
    run = failed_run([(s, "x") for s in statuses], run_status=Run.Status.CANCELLED)
    html = _page(roles.OPERATOR, f"/runs/{run.pk}/")
    assert f">{label}</button>" in html
    if Job.Status.FAILED not in statuses:
        banner = re.search(r'data-testid="failure-banner">(.*?)</div>', html, re.S).group(1)
        assert "Cancelled: 2 of 2 jobs did not finish." in banner and "failed" not in banner


def test_the_job_page_opens_with_its_cause_and_test_connection_answers_with_the_real_reason():
    # A port bound here and never listened on: the connection is refused, and nobody else can take the port.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        target = TargetFactory(name="refusing target", host="127.0.0.1", port=held.getsockname()[1])
        run = failed_run([(Job.Status.FAILED, REFUSED)], target=target)
        job = run.jobs.get()
        html = _page(roles.OPERATOR, f"/jobs/{job.pk}/")
        banner = re.search(r'data-testid="failure-banner">(.*?)</div>', html, re.S).group(1)
        assert "This job failed." in banner and SHOWN in banner and "Test connection" in banner
        client = Client()
        client.force_login(make_user(roles.OPERATOR, "failure-checker"))
        answer = client.post(f"/targets/{target.pk}/check/").content.decode()
        assert re.search(r"refused|could not connect|Can&#x27;t connect", answer, re.I), answer[-2000:]


def test_cancel_asks_first_and_says_what_it_stops():
    run = failed_run([(Job.Status.SUCCEEDED, ""), (Job.Status.RUNNING, ""), (Job.Status.QUEUED, "")],
               run_status=Run.Status.RUNNING)
    html = _page(roles.OPERATOR, f"/runs/{run.pk}/")
    confirm = re.search(r'<details class="confirm">(.*?)</details>', html, re.S).group(1)
    assert 'id="cancel-run-open">Cancel run…</summary>' in confirm
    assert "Its 2 unfinished jobs stop now; the results of finished ones are kept." in confirm
    assert 'id="cancel-run">Yes, cancel the run</button>' in confirm


def test_a_job_that_ends_waits_for_nothing():
    run = failed_run([(Job.Status.WAITING, ""), (Job.Status.RUNNING, ""), (Job.Status.PREPARING, "")],
               run_status=Run.Status.RUNNING)
    Job.objects.filter(run=run).update(wait_reason="starts when job #151 has finished measuring")
    waiting, running, preparing = run.jobs.order_by("position")
    transitions.jobs_cancel(run=run)
    transitions.job_end(job_id=running.pk, status=Job.Status.CANCELLED)
    assert set(Job.objects.filter(pk__in=[waiting.pk, running.pk]).values_list("wait_reason", flat=True)) == {""}
    transitions.job_fail(job_id=preparing.pk, cause="boom")
    assert Job.objects.get(pk=preparing.pk).wait_reason == ""


def test_a_run_that_measured_nothing_says_so_under_its_banner_instead_of_drawing_empty_charts():
    run = failed_run([(Job.Status.FAILED, REFUSED), (Job.Status.CANCELLED, ""), (Job.Status.CANCELLED, "")])
    client = Client()
    client.force_login(make_user(roles.VIEWER, "nothing-viewer"))
    html = client.get(f"/runs/{run.pk}/").content.decode()
    nothing = re.search(r'data-testid="measured-nothing">(.*?)</p>', html, re.S).group(1)
    assert "No job of this run measured anything" in nothing and "the cause is above" in nothing
    assert html.index('data-testid="failure-banner"') < html.index('data-testid="measured-nothing"')
    assert "<canvas" not in html and 'id="chart-throughput"' not in html
    # One second of samples is something to draw: the timeline is back.
    add_samples(run.jobs.get(status=Job.Status.FAILED), 0, [1.0])
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="chart-throughput"' in html and 'data-testid="measured-nothing"' not in html
    # So is a result, and a run still going has its charts whatever it has measured so far.
    other = failed_run([(Job.Status.SUCCEEDED, ""), (Job.Status.FAILED, REFUSED)], target=TargetFactory())
    JobResult.objects.create(job=other.jobs.get(status=Job.Status.SUCCEEDED), qps=100.0)
    running = failed_run([(Job.Status.RUNNING, "")], run_status=Run.Status.RUNNING, target=TargetFactory())
    for shown in (other, running):
        html = client.get(f"/runs/{shown.pk}/").content.decode()
        assert 'id="chart-throughput"' in html and 'data-testid="measured-nothing"' not in html
