"""requirements.txt pins every package its packages need (django-csp needs `packaging`, which
no file pinned, so a fresh install took whatever version came): each pinned package's own requirements, for this
Python and without extras, are pinned too."""
from __future__ import annotations

import importlib.metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent


def _pins(name: str) -> dict[str, str]:
    lines = (ROOT / name).read_text().splitlines()
    # A compiled file: "name==version \\" then indented hash and "# via" lines.
    return {canonicalize_name(line.split("==")[0]): line.split("==")[1].split()[0] for line in lines
            if line and not line.startswith(("#", "-", " "))}


def test_every_requirement_of_a_pinned_package_is_pinned():
    pins = _pins("requirements.txt")
    missing = {}
    for name in pins:
        for text in importlib.metadata.requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            if canonicalize_name(requirement.name) not in pins:
                missing.setdefault(requirement.name, []).append(name)
    assert missing == {}
    assert pins["packaging"] == importlib.metadata.version("packaging")
