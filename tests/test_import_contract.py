"""Every module of the app has its place in the import contract (.importlinter), so none escapes it."""
from __future__ import annotations

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
