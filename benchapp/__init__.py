from __future__ import annotations

import os

# The Celery app is made when the project is imported, so that @shared_task binds to it in every process. Not for
# manage.py's health checks (worker_health, beat_health: one Redis read, run every few seconds), which set this to
# skip the 0.3-0.7 s of Celery, kombu and redis-py imports (benchapp/liveness.py).
if os.environ.get("BENCHAPP_LIVENESS_ONLY") != "1":
    from benchapp.celery import app as celery_app

    __all__ = ("celery_app",)
