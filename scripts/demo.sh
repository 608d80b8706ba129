#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs treadle's main job: the
# dynamic-tree batching benchmark (a TreeLSTM over the bundled SST-like
# trees, batched by the Loom) in its short form, printing the table.
# Extra arguments go to bench/treelstm_bench.py (e.g. drop --short by running
# it directly for the full grid).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec .venv/bin/python bench/treelstm_bench.py --short "$@"
