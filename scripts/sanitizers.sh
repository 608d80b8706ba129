#!/usr/bin/env bash
# The core built with AddressSanitizer and UndefinedBehaviorSanitizer (its own
# build directory build/asan and virtual environment .venv-asan; ccache makes
# rebuilds incremental), running the C++-heavy tests (loom, graph, the
# readers, hostile inputs, cancellation, a kernel sample) and the fuzz corpus.
# Any sanitizer report aborts the process, which fails the step.
#
#   bash scripts/sanitizers.sh              # after scripts/setup.sh (system packages)
#   bash scripts/sanitizers.sh tests/loom   # other pytest arguments
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv-asan
export PIP_DISABLE_PIP_VERSION_CHECK=1
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
VPY=$VENV/bin/python
"$VPY" -c "import tomllib" 2>/dev/null || "$VPY" -m pip install -q tomli
mapfile -t BUILD_REQUIRES < <("$VPY" - <<'PY'
try:
    import tomllib
except ImportError:
    import tomli as tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["build-system"]["requires"]))
PY
)
"$VPY" -m pip install -q "${BUILD_REQUIRES[@]}" ninja

SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
export CCACHE_BASEDIR="$PWD"
echo "sanitizers: building treadle with ASan + UBSan (build directory build/asan)"
"$VPY" -m pip install -q --no-build-isolation -Cbuild-dir=build/asan \
  -Ccmake.build-type=RelWithDebInfo \
  -Ccmake.define.CMAKE_CXX_FLAGS="$SAN" \
  -Ccmake.define.CMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -Ccmake.define.CMAKE_MODULE_LINKER_FLAGS="$SAN" \
  -Ccmake.define.CMAKE_SHARED_LINKER_FLAGS="$SAN" \
  ".[test]"

# Python itself is not instrumented: the runtime is preloaded. Python's own
# allocations are never freed at exit, so leak detection is off.
LD_PRELOAD="$(g++ -print-file-name=libasan.so)"
export LD_PRELOAD
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TREADLE_FUZZ_MEMORY=0  # ASan reserves terabytes of address space: no memory cap under it

TESTS=(tests/loom tests/graph tests/test_hostile_input.py tests/test_cancellation.py tests/test_proto.py
       tests/test_zero_copy.py tests/ops/test_errors.py tests/ops/test_array_gather_where.py
       tests/ops/test_array_slicing.py tests/function/test_function_cache.py)
if [ $# -gt 0 ]; then TESTS=("$@"); fi
"$VPY" -m pytest -q -p no:cacheprovider -m "not slow" "${TESTS[@]}"
"$VPY" -m fuzz.run --corpus
