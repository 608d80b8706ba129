#!/usr/bin/env bash
# The fuzzers in CI: replays the seeds and every regression input, then a
# fixed-seed mutation run of each input kind (FUZZ_SECONDS per kind, 60 by
# default: about ten minutes for the ten kinds). Fails on any crash, hang or
# wrong result; the inputs are left in fuzz/findings/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
.venv/bin/python -m fuzz.run --corpus
.venv/bin/python -m fuzz.run --seconds "${FUZZ_SECONDS:-60}" --seed "${FUZZ_SEED:-1}"
