#!/usr/bin/env bash
# Sets up everything treadle needs, from a fresh Debian 12 machine, and installs
# treadle (with its test extras) into the virtual environment .venv of the
# repository. Idempotent: re-running only rebuilds what changed (the CMake
# build directory build/release is kept).
#
#   bash scripts/setup.sh            # then: .venv/bin/python -c "import treadle"
#
# Environment: PYTHON (interpreter for the venv, default python3),
# TREADLE_BUILD_DIR (default build/release).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# --- system packages: the protobuf compiler and C++ library, a C++ toolchain, CMake
# libhwy-dev: Google Highway, the portable SIMD kernels; ccache: rebuilds in
# other clones and worktrees reuse compiled objects.
APT_PACKAGES=(protobuf-compiler libprotobuf-dev libhwy-dev ccache zlib1g-dev cmake g++ make)
PYTHON=${PYTHON:-python3}
# Debian's own python3 keeps venv in a separate package (pyenv's Python has it).
"$PYTHON" -c "import ensurepip, venv" 2>/dev/null || APT_PACKAGES+=(python3-venv)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
echo "setup: checking the Debian packages"
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -q
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# --- the virtual environment and the build requirements (from pyproject.toml)
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version 2>&1)"
  "$PYTHON" -m venv .venv
fi
VPY=.venv/bin/python
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$VPY" -c "import tomllib" 2>/dev/null || "$VPY" -m pip install -q tomli
mapfile -t BUILD_REQUIRES < <("$VPY" - <<'PY'
try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["build-system"]["requires"]))
PY
)
# Building without isolation (below) keeps the CMake build directory between
# runs; ninja makes those rebuilds fast.
echo "setup: installing the build requirements into .venv"
"$VPY" -m pip install -q "${BUILD_REQUIRES[@]}" ninja

# --- treadle itself, built once and rebuilt incrementally
BUILD_DIR=${TREADLE_BUILD_DIR:-build/release}
# ccache keys on paths relative to the repository, so clones share objects.
export CCACHE_BASEDIR="$PWD"
echo "setup: building and installing treadle (build directory $BUILD_DIR; the first build takes a minute or more)"
if [ -t 1 ]; then
  # On a terminal: the compile steps as a counter on one line; the whole
  # output in build/setup.log, whose end is shown if the build fails.
  mkdir -p build
  if ! "$VPY" -m pip install -v --no-build-isolation -Cbuild-dir="$BUILD_DIR" ".[test]" 2>&1 \
      | "$VPY" scripts/build_progress.py build/setup.log; then
    tail -n 40 build/setup.log
    echo "setup: the build failed; its whole output is in build/setup.log" >&2
    exit 1
  fi
else
  "$VPY" -m pip install -q --no-build-isolation -Cbuild-dir="$BUILD_DIR" ".[test]"
fi
"$VPY" -c "import treadle; print('setup: treadle', treadle.__version__, 'is installed in .venv')"
