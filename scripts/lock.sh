#!/usr/bin/env bash
# Compiles requirements*.in into requirements*.txt: every transitive pin and the sha256 of every file PyPI has for
# it (pip-tools' pip-compile --generate-hashes), which scripts/setup.sh, the Dockerfile and scripts/join-client.sh
# install with --require-hashes. Existing pins are kept; `bash scripts/lock.sh --upgrade-package NAME` moves one.
# pip-tools runs from a venv of its own (var/lock-venv), so that the project's .venv holds only what it needs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ ! -x var/lock-venv/bin/pip-compile ]]; then
    python3 -m venv var/lock-venv
    var/lock-venv/bin/pip install --disable-pip-version-check -q pip-tools==7.6.2
fi
for name in requirements requirements-client requirements-dev; do
    # --allow-unsafe: pip and setuptools are pinned too (requirements.in), with their hashes.
    var/lock-venv/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
        --no-emit-find-links \
        --output-file "$name.txt" "$@" "$name.in"
done
