"""Nightly campaigns, one module per concern:

- schedules: cron schedules and their Celery beat entries, firing, the next firing;
- evaluation: a finished run against its baseline (threshold test), change points, automatic notes, the
  campaign's noise, acknowledging a change and pinning a baseline (the maths is campaigns.statistics' and
  campaigns.changepoints', without the ORM);
- notifications: e-mails and the webhook about changes, and about a run no live worker can take;
- history: what the pages chart (a cell's runs with the baseline band, the cells to pick, recent regressions);
- finished: what follows a run's end, in order.

The names below are the ones the rest of the app imports from `campaigns.monitoring`.
"""
from __future__ import annotations

from campaigns.monitoring.evaluation import (
    CHANGE_POINT_HISTORY,
    CHANGE_POINT_NEAR,
    NOISE_CHANGES_PCT,
    Cell,
    annotations_auto,
    baseline_pin,
    baseline_runs,
    baseline_trust_warning,
    campaign_noise,
    cell_values_by_run,
    history_runs,
    regression_acknowledge,
    run_change_points,
    run_evaluate,
)
from campaigns.monitoring.finished import run_finished
from campaigns.monitoring.history import cell_history, history_cells, recent_regressions
from campaigns.monitoring.notifications import regressions_notify, runs_no_worker_notify, webhook_notify
from campaigns.monitoring.schedules import (
    MIN_FIRING_GAP_S,
    schedule_delete,
    schedule_fire,
    schedule_next_firing,
    schedule_save,
)
from campaigns.webhooks import WebhookFailed

__all__ = [
    "CHANGE_POINT_HISTORY", "CHANGE_POINT_NEAR", "MIN_FIRING_GAP_S", "NOISE_CHANGES_PCT", "Cell", "WebhookFailed",
    "annotations_auto", "baseline_pin", "baseline_runs", "baseline_trust_warning", "campaign_noise", "cell_history", "cell_values_by_run",
    "history_cells", "history_runs", "recent_regressions", "regression_acknowledge", "regressions_notify",
    "run_change_points", "run_evaluate", "run_finished", "runs_no_worker_notify", "schedule_delete", "schedule_fire",
    "schedule_next_firing", "schedule_save", "webhook_notify",
]
