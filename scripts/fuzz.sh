#!/usr/bin/env bash
# The fuzzers in CI: replays the seeds and every regression input, then a
# fixed-seed mutation run of each input kind (FUZZ_SECONDS per kind, 40 by
# default, times the kind's seconds_share: checkpoints, saved models, td.data
# pipelines and parallel weaving under worker faults run half as long; about
# nine minutes in all, which keeps CI under its 40 minutes; longer runs are
# for finding new inputs, `FUZZ_SECONDS=600 bash scripts/fuzz.sh`). Fails on any crash, hang or wrong result; the inputs
# are left in fuzz/findings/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
.venv/bin/python -m fuzz.run --corpus
.venv/bin/python -m fuzz.run --seconds "${FUZZ_SECONDS:-40}" --seed "${FUZZ_SEED:-1}"
