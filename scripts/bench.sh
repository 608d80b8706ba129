#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs the benchmarks, writing
# bench/results/*.json and *.md.
#   bash scripts/bench.sh                 # treadle and NumPy (and PyTorch if installed in .venv)
#   bash scripts/bench.sh --with-peers    # first installs the peers (PyTorch 2.13 CPU; DyNet on Python 3.11) into .venv
# Other arguments go to the benchmark scripts (e.g. --repeat 31, --threads 1).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
if [ "${1:-}" = "--with-peers" ]; then
  shift
  .venv/bin/python -m pip install -q torch==2.13.0
  # DyNet (the automatic-batching peer) has a wheel for Python 3.11 only.
  if .venv/bin/python -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    .venv/bin/python -m pip install -q dyNET38
  fi
fi
.venv/bin/python bench/eager_ops.py "$@"
