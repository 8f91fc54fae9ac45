"""A module imported on first use: numpy and scipy (40-70 MB per process) load only in the process that serves a
request needing them (a comparison's statistics, a series' downsampling, a regression check), not in every gunicorn
worker and Celery pool process at start-up (bench/memory.py)."""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}{' (loaded)' if self._module else ''}>"
