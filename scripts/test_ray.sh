#!/usr/bin/env bash
# td.data's weaving on Ray: installs treadle's `ray` extra (Ray, from PyPI)
# into .venv and runs the Ray tests against a local Ray with two workers.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -x .venv/bin/python ] || bash scripts/setup.sh
.venv/bin/python -c "import ray" 2>/dev/null || .venv/bin/python -m pip install -q "ray>=2.9"
exec .venv/bin/python -m pytest -q tests/data/test_data_ray_weave.py "$@"
