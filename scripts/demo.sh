#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then tells treadle's story in two
# parts: `treadle demo` (a few trees woven into one schedule, their depths,
# the batched runs against running the calls one by one, the check against
# NumPy), and a short race of a TreeLSTM against PyTorch batched by hand
# (bench/demo_race.py; extra arguments go to it, e.g. --rounds 5).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
echo
echo "=== 1. What the Loom does (treadle demo) ==="
echo
.venv/bin/python -m treadle demo
echo
echo "=== 2. A short race against PyTorch ==="
echo
# PyTorch's CPU build (about 200 MB), unless it is there already or
# TREADLE_DEMO_TORCH=0; without it the race runs treadle alone.
if [ "${TREADLE_DEMO_TORCH:-1}" != 0 ] && ! .venv/bin/python -c "import torch" 2>/dev/null; then
  echo "demo: installing PyTorch (CPU build) into .venv to race against it"
  .venv/bin/python -m pip install -q --disable-pip-version-check --timeout 30 --retries 1 \
      --index-url https://download.pytorch.org/whl/cpu torch \
    || echo "demo: could not install PyTorch; treadle runs alone"
fi
exec .venv/bin/python bench/demo_race.py "$@"
