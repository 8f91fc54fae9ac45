"""Who may run code on a target is its owner's choice: a target is used and
changed by its owner (who created it) and admins only. The attack: an operator built a campaign with another
operator's target and a workload that printed its password reversed, and PATCHing that target answered 200."""
from __future__ import annotations

import pytest
from django.test import Client as PageClient

from campaigns import roles
from campaigns.models import Campaign, Target
from tests.conftest import ROOT
from tests.factories import ProductFactory, ScenarioFactory
from tests.helpers.users import client_for, make_user


def _target(api, name: str) -> int:
    answer = api.post("/api/v1/targets/", {"name": name, "product": ProductFactory(name=f"p {name}").pk,
                                           "driver": "mysql", "host": "127.0.0.1", "port": 3306,
                                           "database": "sbtest", "user": "root", "password": "victims-secret"},
                      format="json")
    assert answer.status_code == 201, answer.content
    return answer.json()["id"]


@pytest.mark.django_db
def test_an_operator_may_neither_use_nor_change_another_operators_target():
    victim = client_for(make_user(roles.OPERATOR, "owner-victim"))
    attacker = client_for(make_user(roles.OPERATOR, "owner-attacker"))
    admin = client_for(make_user(roles.ADMIN, "owner-admin"))
    target = _target(victim, "victims db")
    scenario = ScenarioFactory().pk
    refused = attacker.post("/api/v1/campaigns/", {"name": "steal", "targets": [target], "scenarios": [scenario],
                                                   "threads": [1]}, format="json")
    assert refused.status_code == 400, refused.content
    assert refused.json()["targets"] == ["target 'victims db' is owner-victim's: only its owner or an admin may run "
                                         "benchmarks on it"]
    assert not Campaign.objects.filter(name="steal").exists()
    patched = attacker.patch(f"/api/v1/targets/{target}/", {"host": "10.9.9.9"}, format="json")
    assert patched.status_code == 403, patched.content
    assert Target.objects.get(pk=target).host == "127.0.0.1"
    # Its owner and an admin may.
    for who in (victim, admin):
        made = who.post("/api/v1/campaigns/", {"name": f"ok {id(who)}", "targets": [target],
                                               "scenarios": [scenario], "threads": [1]}, format="json")
        assert made.status_code == 201, made.content
    assert admin.patch(f"/api/v1/targets/{target}/", {"name": "victims db 2"}, format="json").status_code == 200
    # A campaign of the owner's, launched by someone else, is refused naming the target.
    campaign = Campaign.objects.filter(targets__pk=target).first()
    launched = attacker.post(f"/api/v1/campaigns/{campaign.pk}/launch/", {}, format="json")
    assert launched.status_code == 400, launched.content
    assert "target 'victims db 2' is owner-victim's" in launched.json()["targets"][0]
    assert not campaign.runs.exists()


@pytest.mark.django_db
def test_an_uploaded_workload_runs_only_on_a_target_whose_owner_allows_it():
    from campaigns import services
    from campaigns.models import WorkloadVersion
    from campaigns.services.launch import TargetForbidden
    from tests.factories import CampaignFactory, TargetFactory

    owner = make_user(roles.OPERATOR, "wl-owner")
    api = client_for(owner)
    kv = ROOT / "tests" / "data" / "workloads" / "kv"
    files = {p.name: p.read_text() for p in kv.glob("*.lua")}
    uploaded = api.post("/api/v1/workloads/", {"name": "kv-own", "entry": "kv.lua", "files": files},
                        format="json")
    assert uploaded.status_code == 201, uploaded.content
    from tests.factories import DatasetFactory

    made = api.post("/api/v1/scenarios/", {"name": "kv own", "workload_version": uploaded.json()["id"],
                                           "dataset": DatasetFactory(name="kv-own").pk, "time_s": 2}, format="json")
    assert made.status_code == 201, made.content
    target = TargetFactory(name="no code here")
    assert target.workloads_allowed is False  # off by default
    from campaigns.models import Scenario

    campaign = CampaignFactory(targets=[target], scenarios=[Scenario.objects.get(pk=made.json()["id"])])
    with pytest.raises(TargetForbidden, match="target 'no code here' does not allow uploaded workloads"):
        services.campaign_launch(campaign=campaign, user=owner)
    launched = api.post(f"/api/v1/campaigns/{campaign.pk}/launch/", {}, format="json")
    assert launched.status_code == 400 and "does not allow uploaded workloads" in launched.json()["targets"][0]
    assert not campaign.runs.exists()
    # Its owner (here: nobody, so anyone; an admin for an owned one) turns it on through the API.
    assert api.patch(f"/api/v1/targets/{target.pk}/", {"workloads_allowed": True}, format="json").status_code == 200
    # The code still needs someone's word who counts on that target: the uploader's own is not (it owns no target).
    version_id = uploaded.json()["id"]
    with pytest.raises(TargetForbidden, match=r"workload:kv-own@v1 is not approved to run on target 'no code here': "
                                              r"an admin approves the version on its workload page"):
        services.campaign_launch(campaign=campaign, user=owner)
    refused = api.post(f"/api/v1/workload-versions/{version_id}/approve/")
    assert refused.status_code == 403 and "you own no target" in refused.json()["detail"]
    admin = make_user(roles.ADMIN, "wl-approver")
    approved = client_for(admin).post(f"/api/v1/workload-versions/{version_id}/approve/")
    assert approved.status_code == 200 and approved.json()["approvals"][0]["approved_by"] == "wl-approver"
    assert services.campaign_launch(campaign=campaign, user=owner).jobs.count() == 1
    assert WorkloadVersion.objects.count() == 1
    # Withdrawn, or given by an admin no longer one, it approves nothing: the next launch is refused again.
    assert client_for(admin).delete(f"/api/v1/workload-versions/{version_id}/approve/").json()["approvals"] == []
    with pytest.raises(TargetForbidden, match="is not approved"):
        services.campaign_launch(campaign=campaign, user=owner)


@pytest.mark.django_db
def test_a_target_owner_approves_a_version_for_their_own_targets_only():
    from campaigns import services
    from campaigns.services.launch import TargetForbidden
    from campaigns.services.workloads import workload_approve, workload_save
    from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory

    kv = ROOT / "tests" / "data" / "workloads" / "kv"
    uploader = make_user(roles.OPERATOR, "wl-uploader")
    version = workload_save(user=uploader, name="kv-owned", files={p.name: p.read_text() for p in kv.glob("*.lua")},
                            entry="kv.lua")
    alice, bob = make_user(roles.OPERATOR, "wl-alice"), make_user(roles.OPERATOR, "wl-bob")
    hers = TargetFactory(name="alice's db", created_by=alice, workloads_allowed=True)
    his = TargetFactory(name="bob's db", created_by=bob, workloads_allowed=True)
    scenario = ScenarioFactory(test=version.label(), workload_version=version, options={},
                               dataset=DatasetFactory(name="kv-owned"))
    workload_approve(user=alice, version=version)
    # Alice's word counts on her target; on Bob's, only Bob's or an admin's would.
    assert services.campaign_launch(campaign=CampaignFactory(targets=[hers], scenarios=[scenario]),
                                    user=alice).jobs.count() == 1
    with pytest.raises(TargetForbidden, match=r"not approved to run on target 'bob's db': an admin or the target's "
                                              r"owner \(wl-bob\)"):
        services.campaign_launch(campaign=CampaignFactory(targets=[his], scenarios=[scenario]), user=bob)
    page = PageClient()
    page.force_login(bob)
    page.post(f"/workloads/{version.workload_id}/versions/{version.number}/approve/")
    assert "Approved by <strong>wl-bob</strong>" in page.get(f"/workloads/{version.workload_id}/").content.decode()
    assert services.campaign_launch(campaign=CampaignFactory(targets=[his], scenarios=[scenario]),
                                    user=bob).jobs.count() == 1
    # The job checks again as it starts: Bob withdraws (an operator owning a target may, through the API) and the
    # coordinator refuses what the launch allowed.
    from campaigns.execution.workloads import workload_refusal

    assert workload_refusal(target=his, scenario=scenario) is None
    withdrawn = client_for(bob).delete(f"/api/v1/workload-versions/{version.pk}/approve/")
    assert withdrawn.status_code == 200, withdrawn.content
    assert [a["approved_by"] for a in withdrawn.json()["approvals"]] == ["wl-alice"]
    assert "not approved to run on target 'bob's db'" in (workload_refusal(target=his, scenario=scenario) or "")
    # Approving twice keeps one approval.
    assert workload_approve(user=alice, version=version) == workload_approve(user=alice, version=version)


@pytest.mark.django_db
def test_a_schedule_fires_as_its_owner_and_a_rerun_as_its_user_held_to_the_same_targets():
    from campaigns import monitoring, services
    from campaigns.models import CampaignSchedule, Job, Run, ScheduleFiring
    from campaigns.services.launch import TargetForbidden
    from tests.factories import CampaignFactory, TargetFactory

    victim = make_user(roles.OPERATOR, "sched-victim")
    attacker = make_user(roles.OPERATOR, "sched-attacker")
    target = TargetFactory(name="victims nightly db", created_by=victim)
    campaign = CampaignFactory(targets=[target], scenarios=[ScenarioFactory()], threads=[1], created_by=victim)
    # The attacker's schedule of the victim's campaign fires as the attacker: refused, naming the target.
    theirs = monitoring.schedule_save(schedule=CampaignSchedule(campaign=campaign, cron="0 2 * * *",
                                                                created_by=attacker))
    firing = monitoring.schedule_fire(schedule_id=theirs.pk)
    assert firing.outcome == ScheduleFiring.Outcome.SKIPPED, firing.reason
    assert "target 'victims nightly db' is sched-victim's" in firing.reason
    assert not Run.objects.filter(campaign=campaign).exists()
    # The owner's own schedule fires, and the run says who it ran for.
    mine = monitoring.schedule_save(schedule=CampaignSchedule(campaign=campaign, cron="0 3 * * *",
                                                              created_by=victim))
    firing = monitoring.schedule_fire(schedule_id=mine.pk)
    assert firing.outcome == ScheduleFiring.Outcome.LAUNCHED, firing.reason
    run = firing.run
    # Its failed jobs retried by the attacker: refused; by the owner: a new run.
    Job.objects.filter(run=run).update(status=Job.Status.FAILED, phase=Job.Phase.DONE)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.FAILED)
    run.refresh_from_db()
    with pytest.raises(TargetForbidden, match="victims nightly db"):
        services.run_rerun(run=run, user=attacker)
    assert services.run_rerun(run=run, user=victim).rerun_of_id == run.pk
    # A schedule whose owner's account is gone fires nothing, and says why.
    gone = monitoring.schedule_save(schedule=CampaignSchedule(campaign=campaign, cron="0 4 * * *",
                                                              created_by=make_user(roles.OPERATOR, "sched-gone")))
    gone.created_by.is_active = False
    gone.created_by.save()
    Run.objects.filter(campaign=campaign).update(status=Run.Status.SUCCEEDED)
    firing = monitoring.schedule_fire(schedule_id=gone.pk)
    assert firing.outcome == ScheduleFiring.Outcome.SKIPPED and "owner's account is gone or inactive" in firing.reason
