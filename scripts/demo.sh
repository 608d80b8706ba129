#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs treadle's main demo.
# Extra arguments go to `treadle demo`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec .venv/bin/python -m treadle demo "$@"
