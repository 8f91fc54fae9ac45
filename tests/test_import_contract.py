"""Every module of the app has its place in the import contract (.importlinter), so none escapes it."""
from __future__ import annotations

import ast
import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_top_level_module_of_the_app_is_placed_in_the_layers_contract():
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    placed = {name.strip() for line in config["importlinter:contract:layers"]["layers"].splitlines()
              for name in line.replace(":", "|").split("|") if name.strip()}
    modules = {f"campaigns.{p.stem}" for p in (ROOT / "campaigns").glob("*.py") if p.stem != "__init__"}
    modules |= {f"campaigns.{p.name}" for p in (ROOT / "campaigns").iterdir()
                if p.is_dir() and (p / "__init__.py").exists()}
    assert modules - placed == set(), "place these in .importlinter's layers"


def _package_imports(package: Path, prefix: str) -> dict[str, set[str]]:
    """Each module of a package and the modules of that package it imports, at its top or inside a function."""
    graph: dict[str, set[str]] = {}
    for path in package.glob("*.py"):
        if path.stem == "__init__":
            continue
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == prefix:
                deps |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(prefix + "."):
                deps.add(node.module.removeprefix(prefix + ".").split(".")[0])
            elif isinstance(node, ast.Import):
                deps |= {a.name.removeprefix(prefix + ".").split(".")[0] for a in node.names
                         if a.name.startswith(prefix + ".")}
        graph[path.stem] = deps - {path.stem}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of the graph, as the modules along it, or [] when there is none."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = "open"
        path.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                return [*path[path.index(dep):], dep]
            if dep in graph and dep not in state and (found := visit(dep)):
                return found
        state[node] = "done"
        path.pop()
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_modules_of_execution_import_each_other_one_way_only():
    # Not even lazily: a function-level import that closes a loop hides the order the modules were meant to have
    # (coordinator and client hand a host test to hostjobs, which builds on turns and measuring, not on them).
    graph = _package_imports(ROOT / "campaigns" / "execution", "campaigns.execution")
    assert "coordinator" in graph and "hostjobs" in graph["coordinator"]
    assert _cycle(graph) == []
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]  # the check finds one
