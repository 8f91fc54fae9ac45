"""Change points in a cell's history: E-Divisive means on series with known change points, and the
nightly check that stores, marks and notifies them."""
from __future__ import annotations

import numpy as np
import pytest
from django.core import mail
from django.utils import timezone

from campaigns import monitoring, roles
from campaigns.changepoints import best_split, change_points
from campaigns.models import Job, JobResult, Regression, Run
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user


def _series(rng: np.random.Generator, n: int, cv: float, steps: dict[int, float] | None = None) -> list[float]:
    level = np.ones(n)
    for at, factor in (steps or {}).items():
        level[at:] *= factor
    return list(10_000 * level * rng.lognormal(0, cv, n))


def test_a_five_percent_step_under_any_threshold_is_found_where_it_is():
    (point,) = change_points(_series(np.random.default_rng(1), 40, 0.01, {25: 0.95}))
    assert abs(point.index - 25) <= 1 and point.p_value < 0.05
    assert point.change_pct == pytest.approx(-5.0, abs=1.5) and point.after < point.before


def test_two_steps_are_two_change_points_in_order():
    points = change_points(_series(np.random.default_rng(2), 60, 0.01, {20: 0.9, 40: 1.15}))
    assert [abs(p.index - at) <= 2 for p, at in zip(points, (20, 40), strict=True)] == [True, True]
    assert points[0].change_pct < 0 < points[1].change_pct


def test_a_steady_history_rarely_has_a_change_point():
    rng = np.random.default_rng(3)
    flagged = sum(bool(change_points(_series(rng, 40, 0.03), seed=seed)) for seed in range(40))
    assert flagged <= 5  # the permutation test's 5%, with room for chance over 40 series


def test_the_split_statistic_peaks_at_the_step_and_short_or_gappy_series_are_handled():
    values = np.log(np.array([100.0] * 10 + [90.0] * 10))
    assert best_split(values)[0] == 10
    assert change_points([100.0, 90.0, 95.0]) == []
    with pytest.raises(ValueError, match="missing values"):
        change_points([100.0, None, 90.0] * 5)  # type: ignore[list-item]


# ---------------------------------------------------------------- the nightly check


def _nights(values: list[float]) -> tuple[list[Run], object]:
    target, scenario = TargetFactory(), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], notify_emails="perf@example.com")
    runs = []
    for value in values:
        now = timezone.now()
        run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, trigger=Run.Trigger.SCHEDULED,
                                 started_at=now, finished_at=now)
        job = Job.objects.create(run=run, target=target, scenario=scenario, threads=8, status=Job.Status.SUCCEEDED)
        JobResult.objects.create(job=job, qps=value, latency_pct_ms=1e5 / value, latency_pct=95.0)
        runs.append(run)
    return runs, campaign


@pytest.mark.django_db
def test_a_four_percent_step_no_night_flags_is_stored_marked_and_notified_once(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    rng = np.random.default_rng(4)
    runs, campaign = _nights(_series(rng, 30, 0.005, {20: 0.96}))
    for run in runs[:-1]:
        monitoring.run_evaluate(run=run)  # nightly threshold checks: a 4% step stays under the 5% threshold
    assert not Regression.objects.exists()
    assert Run.objects.get(pk=runs[-1].pk).evaluated_at is None
    monitoring.run_finished(run_id=runs[-1].pk)
    assert Run.objects.get(pk=runs[-1].pk).evaluated_at is not None  # what a pipeline waits for (the CLI does)
    (point,) = Regression.objects.filter(detector=Regression.Detector.CHANGE_POINT)
    assert abs(runs.index(point.run) - 20) <= 1 and point.found_in_run_id == runs[-1].pk
    assert point.kind == Regression.Kind.REGRESSION and point.change_pct == pytest.approx(-4.0, abs=1.0)
    assert point.method.startswith("e-divisive means") and point.notified_at is not None
    assert len(mail.outbox) == 1 and f"change point at run #{point.run_id}" in mail.outbox[0].body
    # The next night finds the same step again: not stored or sent twice.
    next_night = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, trigger=Run.Trigger.SCHEDULED,
                                    started_at=timezone.now(), finished_at=timezone.now())
    JobResult.objects.create(job=Job.objects.create(run=next_night, target=point.target, scenario=point.scenario,
                                                    threads=8, status=Job.Status.SUCCEEDED), qps=9600.0)
    monitoring.run_finished(run_id=next_night.pk)
    assert Regression.objects.filter(detector=Regression.Detector.CHANGE_POINT).count() == 1 and len(mail.outbox) == 1
    # The history marks the run where the new level starts.

    body = client_for(make_user(roles.VIEWER)).get(
        f"/api/v1/regressions/history/?campaign={campaign.pk}&target={point.target_id}&scenario={point.scenario_id}"
        "&threads=8").json()
    marked = [p["run_id"] for p in body["points"] if p["change_point"]]
    assert marked == [point.run_id] and {c["detector"] for c in body["changes"]} == {"change_point"}
