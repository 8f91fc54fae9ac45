# benchapp developer commands. Each target first runs scripts/setup.sh, which installs and starts what is missing
# (Debian packages, PostgreSQL, Redis, MariaDB, .venv, front-end build) and is a quick no-op otherwise.
#
#   make run     migrate, collect static files, load the demo data, then web + Celery worker + beat under supervisord
#                (scripts/supervise.sh: each restarted alone when it dies; they run as the user `benchapp`)
#   make check   the fast loop (under 90 s): ruff, mypy, makemigrations --check, the import contract, and the tests
#                that need no Celery worker, browser or fuzzing
#   make test    make check, then every other test (workers, sysbench, browser, schema fuzzing)
#   make upgrade with `make run` going in another shell, after a `git pull`: packages, migrate, static files, then the
#                worker drained (its job finishes, no new one) and restarted, then web and beat restarted
#   make bench   runs every bench/*.py with the venv's python but bench/faults.py (about 40 min: run it alone)
#
# PORT picks the web port (default 8000): `PORT=8080 make run`. A second installation on one machine is a second
# checkout given its own ports once (recorded in var/install.env): `BENCHAPP_PG_PORT=5442 BENCHAPP_REDIS_PORT=6389
# BENCHAPP_MARIADB_PORT=3316 BENCHAPP_DB_NAME=benchapp2 PORT=8010 make run` (docs/operations.md).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Python keeps compiled modules (and pytest its assertion-rewritten tests) in __pycache__/: an environment that
# sets PYTHONDONTWRITEBYTECODE makes every pytest process compile all of them again, 8 of make check's seconds per
# process (collection 13.8 s instead of 5.5 s). The commands here always keep them.
unexport PYTHONDONTWRITEBYTECODE

VENV := .venv
PY := $(VENV)/bin/python
# The web port: PORT given, else the one scripts/setup.sh recorded for this checkout (var/install.env), else 8000.
PORT ?= $(or $(shell sed -n 's/^BENCHAPP_PORT=//p' var/install.env 2>/dev/null | tail -n 1),8000)

.PHONY: help setup setup-dev run upgrade check test bench

help:
	@echo "make run     set up, migrate, load demo data, serve on http://127.0.0.1:$(PORT)/ with worker and beat"
	@echo "make check   set up, then ruff, mypy, makemigrations --check, lint-imports, the fast tests (< 90 s)"
	@echo "make test    make check, then every other test (workers, sysbench, browser, schema fuzzing)"
	@echo "make upgrade after a git pull, with make run going: migrate, drain and restart the worker, restart web and beat"
	@echo "make bench   set up, then run every bench/*.py"
	@echo "make setup   only scripts/setup.sh (packages, services, databases, .venv, front end)"

setup:
	@bash scripts/setup.sh

setup-dev:
	@SETUP_DEV=1 bash scripts/setup.sh

run: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput
	DEMO_PGSQL_PORT=$${DEMO_PGSQL_PORT:-$$(bash scripts/pg-targets.sh --port)} $(PY) manage.py load_demo
	$(PY) manage.py load_seed_templates
	@echo
	@echo "benchapp is starting on http://127.0.0.1:$(PORT)/ (web, Celery worker and beat under supervisord, each"
	@echo "restarted when it dies; Ctrl-C stops all three; \`scripts/supervise.sh ctl status\` from another shell)."
	@echo "Log in as user 'admin' with the password load_demo printed above."
	@echo
	BENCHAPP_PORT=$(PORT) exec bash scripts/supervise.sh

# Migrations first, while the old code still runs (benchapp's migrations add, never drop or rename in the same release:
# docs/operations.md, "Upgrades"); then the worker drained, so that its restart loses no job, and restarted; web and
# beat last (gunicorn preloads the application: a HUP would not load the new code, a restart does).
DRAIN_WAIT_S ?= 3900
upgrade: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput
	$(PY) manage.py worker_drain --wait $(DRAIN_WAIT_S)
	bash scripts/supervise.sh ctl restart worker
	bash scripts/supervise.sh ctl restart web beat
	bash scripts/supervise.sh ctl status

# The fast tests: no Celery worker, no browser, no schema fuzzing (markers in pyproject.toml).
FAST := not integration and not browser and not slow
# make test runs the other tests in TEST_PROCS pytest-xdist processes (most of their time is spent waiting on sysbench
# runs of a fixed length, so more processes than cores pay), each with its own Celery worker, queue, test database and
# target databases (tests/pytest_env.py); --dist loadgroup keeps a module marked xdist_group in one process. Then the
# tests marked `alone` (they time something a loaded machine slows) one at a time. docs/development.md, "Tests".
TEST_PROCS ?= 4

check: setup-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) manage.py makemigrations --check --dry-run
	$(VENV)/bin/lint-imports
	$(VENV)/bin/pytest -m "$(FAST)" -n 2

test: check
	$(VENV)/bin/pytest -m "not ($(FAST)) and not alone" -n $(TEST_PROCS) --dist loadgroup --durations=20
	$(VENV)/bin/pytest -m "alone and not ($(FAST))" --durations=5 || [[ $$? -eq 5 ]]  # 5: none is marked alone

# bench/ scripts import the project, so the repository root goes on PYTHONPATH as it would for manage.py.
bench: setup
	@shopt -s nullglob; \
	files=(); for f in bench/[!_]*.py; do [[ $$f == bench/faults.py ]] || files+=("$$f"); done; \
	if (( $${#files[@]} == 0 )); then echo "bench: no bench/*.py to run"; exit 0; fi; \
	for f in "$${files[@]}"; do \
		echo "== $$f"; \
		PYTHONPATH="$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH}" $(PY) "$$f"; \
	done
