"""Annotations: the one way they are created and changed (campaigns.services.rows)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from campaigns.models import Annotation, Run, Target
from campaigns.services.rows import acting_user, row_write


def annotation_create(*, user: Any = None, text: str, run: Run | None = None, target: Target | None = None,
                      at: datetime | None = None, kind: str = Annotation.Kind.USER) -> Annotation:
    """A note on a run or a target, at `at` (default: the run's start, or now)."""
    if at is None:
        at = (run.started_at or run.created_at) if run is not None else timezone.now()
    return row_write(Annotation(), {"text": (text or "").strip(), "run": run, "target": target, "at": at,
                                    "kind": kind, "created_by": acting_user(user)})


def annotation_update(*, annotation: Annotation, user: Any = None, **fields: Any) -> Annotation:
    if "text" in fields:
        fields["text"] = (fields["text"] or "").strip()
    return row_write(annotation, fields, user=user)
