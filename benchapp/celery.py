"""The Celery application. Configuration lives in settings as CELERY_* names."""
from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
# Celery runs Django's system checks when a worker starts, and the URL checks import every view, the API and with
# them numpy and scipy (70-80 MB in each process). A client host's worker runs no view: the server checks them.
if os.environ.get("BENCHAPP_WORKER_ROLE") == "client":
    os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("benchapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
