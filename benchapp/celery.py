"""The Celery application. Configuration lives in settings as CELERY_* names."""
from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
# Celery runs Django's system checks when a worker or beat starts, and the URL checks import every view and the API
# (30-40 MB in each process, and in each pool process forked from it). Neither serves a view: `manage.py migrate`,
# which `make run`, docker-compose.yml and scripts/setup.sh run before them, checks the same project
# (bench/memory.py). BENCHAPP_CELERY_CHECKS=true runs them again.
if os.environ.get("BENCHAPP_CELERY_CHECKS", "").lower() not in ("1", "true", "yes", "on"):
    os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("benchapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
