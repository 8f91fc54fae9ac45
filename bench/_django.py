"""What the bench scripts share to reach the project. Importing this module puts the repository's root on sys.path:
bench scripts import the project (campaigns, benchapp) and the plain-Python helpers they share with the tests
(tests/helpers/waiting.py, namespaces.py, joining.py). `setup()` sets Django up on the configured (development)
database."""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
    import django

    django.setup()
