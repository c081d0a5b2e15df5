#!/usr/bin/env bash
# Creates (or completes) the one virtual environment with Harbor's own models that the tests
# validate against: the ATIF export tests (harbor.models.trajectories) and the task export
# tests (harbor.models.task.config). Usage: setup.sh VENV_DIR (.ci/run: target/harbor-venv).
# Idempotent: a venv whose marker names these pins is left as it is.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$1"
harbor_version="0.25.0"
marker="$venv/.specgap-harbor-$harbor_version"
if [ -f "$marker" ] && cmp -s "$marker" "$here/requirements.txt"; then
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --ignore-requires-python "harbor==$harbor_version"
"$venv/bin/python" -c "import harbor.models.trajectories, harbor.models.task.config"
cp "$here/requirements.txt" "$marker"
