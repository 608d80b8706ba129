#!/usr/bin/env bash
# The fuzzers in CI: replays the seeds and every regression input, then a
# short fixed-seed mutation run of each input kind (FUZZ_SECONDS per kind,
# 15 by default: about two minutes in all). Fails on any crash, hang or
# wrong result; the inputs are left in fuzz/findings/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
.venv/bin/python -m fuzz.run --corpus
.venv/bin/python -m fuzz.run --seconds "${FUZZ_SECONDS:-15}" --seed "${FUZZ_SEED:-1}"
