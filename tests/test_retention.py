"""Retention: expired sessions and old django-axes access records go, by a dry-run-able sweep."""
from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt, AccessLog
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.utils import timezone

from campaigns.observability import metrics
from campaigns.services.retention import retention_sweep

pytestmark = pytest.mark.django_db


def _world() -> None:
    now = timezone.now()
    Session.objects.create(session_key="expired-session-1", session_data="x", expire_date=now - timedelta(hours=1))
    Session.objects.create(session_key="live-session-1", session_data="x", expire_date=now + timedelta(hours=1))
    for days in (200, 1):
        log = AccessLog.objects.create(user_agent="ua", ip_address="127.0.0.1", username=f"u{days}",
                                       http_accept="*/*", path_info="/login/")
        attempt = AccessAttempt.objects.create(user_agent="ua", ip_address="127.0.0.1", username=f"u{days}",
                                               http_accept="*/*", path_info="/login/", get_data="", post_data="",
                                               failures_since_start=1)
        # attempt_time is auto_now_add: set afterwards, as time would have.
        AccessLog.objects.filter(pk=log.pk).update(attempt_time=now - timedelta(days=days))
        AccessAttempt.objects.filter(pk=attempt.pk).update(attempt_time=now - timedelta(days=days))


def test_a_dry_run_counts_what_the_sweep_then_deletes_and_nothing_younger(capsys):
    _world()
    call_command("retention_sweep", "--dry-run")
    assert capsys.readouterr().out.strip() == ("retention: would delete 1 sessions, 1 access logs, 0 access failures, "
                                               "1 access attempts, 0 coarse attempts")
    assert Session.objects.count() == 2 and AccessLog.objects.count() == 2
    assert retention_sweep() == {"sessions": 1, "access_logs": 1, "access_failures": 0, "access_attempts": 1,
                                 "coarse_attempts": 0, "coarse_bytes_freed": 0}
    assert list(Session.objects.values_list("session_key", flat=True)) == ["live-session-1"]
    assert list(AccessLog.objects.values_list("username", flat=True)) == ["u1"]
    assert list(AccessAttempt.objects.values_list("username", flat=True)) == ["u1"]
    assert 'benchapp_retention_deleted_total{kind="sessions"}' in metrics.scrape().decode()
