"""Who may have a target now (execution.turns.target_busy): a database belongs to one run at a time, and a
settings variant, which changes server-wide settings, to the whole server: a run without variants never measures
under another run's variant, and a variant never changes the settings under another run's measurement."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from campaigns.execution.turns import target_busy
from campaigns.models import Job, SettingsChange, Target
from tests.factories import JobFactory, TargetFactory

pytestmark = pytest.mark.django_db


def _job(target: Target, *, variant: str = "", claimed_s_ago: float = 0.0,
         status: str = Job.Status.RUNNING) -> Job:
    return JobFactory(target=target, variant=variant, status=status,
                      claimed_at=timezone.now() - timedelta(seconds=claimed_s_ago))


def _targets() -> tuple[Target, Target]:
    """Two databases on one server."""
    return TargetFactory(database="sb_one"), TargetFactory(database="sb_two")


def test_another_database_of_the_server_is_free_when_nobody_uses_a_variant() -> None:
    one, two = _targets()
    _job(one, claimed_s_ago=10)
    assert target_busy(_job(two)) is None


def test_the_same_database_waits_for_the_run_that_claimed_it_first() -> None:
    one, _ = _targets()
    holder = _job(one, claimed_s_ago=10)
    busy = target_busy(_job(TargetFactory(database="sb_one")))
    assert busy is not None and busy.job == holder
    assert busy.reason.startswith(f"the database is busy with run #{holder.run_id}")
    assert target_busy(holder) is None, "the job claimed first keeps the database"


def test_a_job_without_a_variant_waits_while_another_runs_variant_holds_the_server() -> None:
    one, two = _targets()
    holder = _job(one, variant="lazy", claimed_s_ago=10)
    busy = target_busy(_job(two))
    assert busy is not None and busy.job == holder
    assert f"the server 127.0.0.1:{one.port} is busy with run #{holder.run_id}" in busy.reason
    assert "its settings variant 'lazy' changes server-wide settings" in busy.reason


def test_a_variant_job_waits_for_another_runs_measurement_on_the_server_and_the_first_keeps_it() -> None:
    one, two = _targets()
    holder = _job(one, claimed_s_ago=10)
    later = _job(two, variant="lazier")
    busy = target_busy(later)
    assert busy is not None and busy.job == holder
    assert "this job's settings variant 'lazier' changes server-wide settings" in busy.reason
    assert target_busy(holder) is None


def test_a_server_on_another_port_or_a_finished_variant_job_is_no_obstacle() -> None:
    one, _ = _targets()
    _job(TargetFactory(database="sb_one", port=3307), variant="lazy", claimed_s_ago=10)
    _job(one, variant="lazy", claimed_s_ago=20, status=Job.Status.SUCCEEDED)
    assert target_busy(_job(TargetFactory(database="sb_two"))) is None


def test_a_variant_not_yet_put_back_holds_jobs_without_a_variant_but_not_one_that_puts_it_back() -> None:
    one, two = _targets()
    ended = _job(one, variant="lazy", claimed_s_ago=60, status=Job.Status.FAILED)
    SettingsChange.objects.create(job=ended, target=one, variant="lazy", wanted={"x": "2"},
                                  originals={"x": {"value": "1"}}, restore_error="connection refused")
    busy = target_busy(_job(two, status=Job.Status.WAITING))
    assert busy is not None and busy.job is None
    assert busy.reason == (f"the settings variant 'lazy' of job #{ended.pk} is still to be put back on "
                           f"127.0.0.1:{one.port} (connection refused); starts once it is")
    # A variant job restores what is left before it changes anything (variants.variant_apply).
    assert target_busy(_job(two, variant="lazier", status=Job.Status.WAITING)) is None
    SettingsChange.objects.update(restored_at=timezone.now())
    assert target_busy(_job(two, status=Job.Status.WAITING)) is None


def test_a_cancelled_job_still_stopping_keeps_the_database_until_it_is_closed() -> None:
    """Its sysbench is being killed and its closer may be dropping the tables: the next run waits for that."""
    one, _ = _targets()
    holder = _job(one, claimed_s_ago=10, status=Job.Status.CANCELLED)
    Job.objects.filter(pk=holder.pk).update(phase=Job.Phase.FINALIZING)
    later = _job(TargetFactory(database="sb_one"))
    busy = target_busy(later)
    assert busy is not None and busy.job == holder
    Job.objects.filter(pk=holder.pk).update(phase=Job.Phase.DONE)
    assert target_busy(later) is None
