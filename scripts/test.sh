#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs the whole test suite,
# including the slow wheel test. Extra arguments go to pytest, e.g.
#   bash scripts/test.sh -m "not slow"      bash scripts/test.sh tests/test_proto.py
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -q "$@"
