"""Who may have a target now (execution.turns.target_busy, hosts_busy): a server, whatever database or target
name, belongs to one run's measurement at a time, and so does a client host; campaigns that both share on purpose
measure beside each other on other databases of a server, never under a settings variant, which changes
server-wide settings: a run never measures under another run's variant, and a variant never changes the settings
under another run's measurement."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from campaigns.execution.turns import hosts_busy, target_busy
from campaigns.models import Campaign, Job, JobClient, SettingsChange, Target
from tests.factories import JobFactory, TargetFactory

pytestmark = pytest.mark.django_db


def _job(target: Target, *, variant: str = "", claimed_s_ago: float = 0.0,
         status: str = Job.Status.RUNNING) -> Job:
    return JobFactory(target=target, variant=variant, status=status,
                      claimed_at=timezone.now() - timedelta(seconds=claimed_s_ago))


def _targets() -> tuple[Target, Target]:
    """Two databases on one server."""
    return TargetFactory(database="sb_one"), TargetFactory(database="sb_two")


def test_another_database_of_the_server_waits_for_the_run_that_claimed_the_server_first() -> None:
    one, two = _targets()
    holder = _job(one, claimed_s_ago=10)
    busy = target_busy(_job(two))
    assert busy is not None and busy.job == holder
    assert busy.reason == (f"waits for the server 127.0.0.1:{one.port}: job #{holder.pk} of run #{holder.run_id} "
                           f"({holder.run.campaign.name}) measures there; starts when that job has finished")
    assert target_busy(holder) is None, "the job claimed first keeps the server"


def test_the_same_server_under_another_name_waits_too() -> None:
    holder = _job(TargetFactory(database="sb_one"), claimed_s_ago=10)
    busy = target_busy(_job(TargetFactory(host="localhost", database="sb_two")))
    assert busy is not None and busy.job == holder


def test_campaigns_that_both_share_measure_side_by_side_on_other_databases_only() -> None:
    one, two = _targets()
    holder = _job(one, claimed_s_ago=10)
    later = _job(two)
    for job in (holder, later):
        Campaign.objects.filter(pk=job.run.campaign_id).update(share_server=True)
    assert target_busy(Job.objects.get(pk=later.pk)) is None
    same = _job(TargetFactory(database="sb_one"))
    Campaign.objects.filter(pk=same.run.campaign_id).update(share_server=True)
    assert target_busy(Job.objects.get(pk=same.pk)) is not None, "one database is never shared"
    alone = _job(TargetFactory(database="sb_three"))  # its campaign does not share: it waits
    assert target_busy(alone) is not None


def test_the_same_database_waits_for_the_run_that_claimed_it_first() -> None:
    one, _ = _targets()
    holder = _job(one, claimed_s_ago=10)
    busy = target_busy(_job(TargetFactory(database="sb_one")))
    assert busy is not None and busy.job == holder
    assert busy.reason.startswith(f"waits for the database: job #{holder.pk} of run #{holder.run_id}")
    assert target_busy(holder) is None, "the job claimed first keeps the database"


def test_a_client_host_measures_one_runs_job_at_a_time_host_tests_included() -> None:
    """A database job's clients and another run's job on the same client host would measure each other's load; a
    host test of that host too."""
    holder = _job(TargetFactory(database="sb_one"), claimed_s_ago=10)
    Job.objects.filter(pk=holder.pk).update(claimed_by="host-a")
    JobClient.objects.create(job=holder, index=0, host_name="host-b", status=JobClient.Status.RUNNING)
    later = _job(TargetFactory(host="10.9.9.9", database="elsewhere"))
    for hosts in (["host-a"], ["host-b"], ["host-c", "host-b"]):
        busy = hosts_busy(later, hosts)
        assert busy is not None and busy.job == holder, hosts
        assert f"job #{holder.pk} of run #{holder.run_id}" in busy.reason and "waits for client host host-" in busy.reason
    assert hosts_busy(later, ["host-c"]) is None
    assert hosts_busy(holder, ["host-a"]) is None, "the job claimed first keeps its hosts"
    host_test = _job(TargetFactory(kind=Target.Kind.CLIENT_HOST, host="host-c", driver="", database=""),
                     claimed_s_ago=20)
    busy = hosts_busy(later, ["host-c"])
    assert busy is not None and busy.job == host_test and busy.reason.startswith("waits for client host host-c: ")


def test_a_job_without_a_variant_waits_while_another_runs_variant_holds_the_server() -> None:
    one, two = _targets()
    holder = _job(one, variant="lazy", claimed_s_ago=10)
    busy = target_busy(_job(two))
    assert busy is not None and busy.job == holder
    assert busy.reason.startswith(f"waits for the server 127.0.0.1:{one.port}: job #{holder.pk} of run "
                                  f"#{holder.run_id}")
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


def test_repetitions_interleave_across_targets_so_that_a_drift_falls_on_both() -> None:
    from campaigns.services.plans import campaign_expand
    from tests.factories import CampaignFactory, ScenarioFactory

    a, b = TargetFactory(name="a"), TargetFactory(name="b")
    campaign = CampaignFactory(targets=[a, b], scenarios=[ScenarioFactory()], threads=[1, 8], repetitions=2)
    order = [(p.threads, p.repetition, p.target.name) for p in campaign_expand(campaign=campaign)]
    # Counterbalanced: every second repetition in the reverse turn, so a steady drift cancels over each pair.
    assert order == [(1, 1, "a"), (1, 1, "b"), (1, 2, "b"), (1, 2, "a"),
                     (8, 1, "a"), (8, 1, "b"), (8, 2, "b"), (8, 2, "a")]
    assert [p.position for p in campaign_expand(campaign=campaign)] == list(range(8))


def test_a_held_server_is_held_whatever_name_a_target_gives_it_and_confirmed_through_any_of_them() -> None:
    """A change held on 127.0.0.1 holds jobs of a target that calls the same server `localhost` (or this machine's
    own address); a person confirming it through that target frees it for every name."""
    from django.contrib.auth import get_user_model

    from campaigns.endpoints import server_key
    from campaigns.services.variants import settings_confirm

    one = TargetFactory(database="sb_one", host="127.0.0.1")
    other_name = TargetFactory(database="sb_two", host="localhost")
    elsewhere = TargetFactory(database="sb_two", host="localhost", port=one.port + 1)
    ended = _job(one, variant="lazy", claimed_s_ago=60, status=Job.Status.FAILED)
    SettingsChange.objects.create(job=ended, target=one, variant="lazy", wanted={"x": "2"},
                                  originals={"x": {"value": "1"}}, held_at=timezone.now(), dba_sql="SET GLOBAL x = 1")
    busy = target_busy(_job(other_name, status=Job.Status.WAITING))
    assert busy is not None and busy.reason.startswith("held: the settings variant 'lazy'")
    assert target_busy(_job(elsewhere, status=Job.Status.WAITING)) is None  # another port: another server
    assert server_key("localhost", one.port) == server_key("127.0.0.1", one.port)  # one lock for both names
    assert server_key("localhost", one.port) != server_key("localhost", one.port + 1)
    admin = get_user_model().objects.create_user("confirming-admin")
    assert settings_confirm(target=other_name, user=admin) == 1
    assert target_busy(_job(other_name, status=Job.Status.WAITING)) is None
