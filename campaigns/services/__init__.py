"""What a user starts: plans, launches and cancels, imports of logs made elsewhere, target checks, demo data.

Everything after a launch lives in campaigns.execution, which this package builds on and which never
imports it back. Functions are keyword-only and named <noun>_<verb>; the names below are the ones
the rest of the app imports from here.
"""
from __future__ import annotations

from campaigns.execution.phases import JobFailure, split_threads, target_connection
from campaigns.execution.transitions import StateConflict
from campaigns.services.annotations import annotation_create, annotation_update
from campaigns.services.bundles import BundleRejected, bundle_import, bundle_json, run_export
from campaigns.services.campaigns import campaign_create, campaign_update
from campaigns.services.datasets import dataset_create, dataset_update
from campaigns.services.demo import DEMO_TARGET_NAMES, demo_load
from campaigns.services.hosttests import HOST_TEST_DATASET, host_test_dataset
from campaigns.services.imports import ImportRejected, results_import
from campaigns.services.launch import (
    ScenarioDdlRefused,
    VariantsRefused,
    campaign_ddl_check,
    campaign_launch,
    run_cancel,
    run_confirm,
    run_rerun,
)
from campaigns.services.plans import (
    BYTES_PER_ROW,
    JOB_OVERHEAD_S,
    PREPARE_ROWS_PER_S,
    PlannedJob,
    campaign_expand,
    campaign_plan,
    format_duration,
    job_estimate_s,
    measured_overhead_s,
    run_progress,
    runs_progress,
    runs_with_progress,
)
from campaigns.services.quick import (
    DEFAULT_PORTS,
    NewTarget,
    QuickMatrix,
    QuickPlan,
    quick_campaign_create,
    quick_compare_launch,
    quick_compare_plan,
    quick_target_create,
)
from campaigns.services.rows import row_write
from campaigns.services.scenarios import scenario_create, scenario_update
from campaigns.services.targets import CheckRateExceeded, target_check, target_create, target_update
from campaigns.services.tokens import token_hash, token_issue, token_revoke
from campaigns.services.variants import settings_confirm

__all__ = [
    "annotation_create", "annotation_update", "campaign_create", "campaign_update", "dataset_create",
    "dataset_update", "row_write", "scenario_create", "scenario_update", "target_create", "target_update",
    "BundleRejected", "bundle_import", "bundle_json", "run_export", "run_confirm", "run_rerun",
    "BYTES_PER_ROW", "DEFAULT_PORTS", "DEMO_TARGET_NAMES", "JOB_OVERHEAD_S", "PREPARE_ROWS_PER_S", "ImportRejected", "JobFailure", "NewTarget",
    "PlannedJob", "QuickMatrix", "QuickPlan", "ScenarioDdlRefused", "StateConflict", "VariantsRefused", "campaign_ddl_check", "campaign_expand", "campaign_launch", "campaign_plan", "demo_load",
    "format_duration", "job_estimate_s", "quick_campaign_create", "quick_compare_launch",
    "quick_compare_plan", "quick_target_create", "results_import", "run_cancel", "run_progress", "runs_progress",
    "runs_with_progress", "measured_overhead_s",
    "HOST_TEST_DATASET", "host_test_dataset",
    "settings_confirm", "split_threads", "target_check", "CheckRateExceeded", "target_connection", "token_hash", "token_issue", "token_revoke",
]
