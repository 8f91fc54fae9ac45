"""The tests are a tree of their own: no test module imports another (shared helpers live in tests/helpers/ and
tests/factories.py), so a test module can be moved, renamed or run alone."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported_test_modules(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] if node.module != "tests" else [f"tests.{a.name}" for a in node.names]
            found += [f"{path.name}:{node.lineno} imports {n}" for n in names if n.startswith("tests.test_")]
        elif isinstance(node, ast.Import):
            found += [f"{path.name}:{node.lineno} imports {a.name}" for a in node.names if a.name.startswith("tests.test_")]
    return found


def test_no_test_module_imports_another():
    offenders = [line for path in sorted(TESTS.rglob("*.py")) for line in _imported_test_modules(path)]
    assert offenders == [], "move what is shared to tests/helpers/ or tests/factories.py:\n" + "\n".join(offenders)


def test_the_check_finds_an_import_of_a_test_module(tmp_path):
    sample = tmp_path / "test_sample.py"
    # (Written in parts, so that a grep of tests/ for such imports finds none in the tree either.)
    test_ = "test_"
    sample.write_text(f"from tests.{test_}api import make_user\nfrom tests import {test_}faults\nimport tests.{test_}ui\n")
    assert len(_imported_test_modules(sample)) == 3
