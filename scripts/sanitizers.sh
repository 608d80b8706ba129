#!/usr/bin/env bash
# The core built with AddressSanitizer and UndefinedBehaviorSanitizer (its own
# build directory build/asan and virtual environment .venv-asan; ccache makes
# rebuilds incremental), running the C++-heavy tests (loom, graph, the
# readers, hostile inputs, cancellation, kernels, gradients), the fuzz corpus
# and a short mutation run.
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

# Python itself is not instrumented: the runtime is preloaded, with libstdc++
# (ASan intercepts __cxa_throw only if libstdc++ is loaded when it starts).
# Python's own allocations are never freed at exit, so leak detection is off.
# An allocation that cannot be granted returns null (treadle raises MemoryError), as without ASan.
# greenlet's stack copies are excused (scripts/asan_suppressions.txt says why).
LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libstdc++.so)"
export LD_PRELOAD TREADLE_NO_DEEPBIND=1
export ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=0:abort_on_error=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=0:suppressions=$PWD/scripts/asan_suppressions.txt"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TREADLE_FUZZ_MEMORY=0  # ASan reserves terabytes of address space: no memory cap under it

# The C++-heavy tests (tests/ops includes the SIMD kernels at every level the
# CPU has). Not here: the RSS checks of tests/test_long_runs.py (ASan's
# quarantine holds freed memory).
TESTS=(tests/loom tests/graph tests/function tests/ops tests/autodiff/test_op_gradients.py
       tests/test_hostile_input.py tests/test_cancellation.py tests/test_proto.py tests/test_zero_copy.py
       tests/test_blas_kernels.py
       tests/data/test_data_core_stages.py tests/data/test_data_parallel_stages.py tests/data/test_data_cache_file.py
       tests/data/test_data_records.py tests/data/test_data_cancellation.py
       tests/training/test_checkpoint_integrity.py tests/io/test_saved_structures.py
       tests/data/test_data_python_loops_while_tracing.py
       tests/test_audit3_core.py tests/loom/test_audit3_loom.py tests/data/test_audit3_data.py
       tests/test_exit_with_live_iterators.py
       tests/test_long_runs.py::test_threads_calling_one_function_get_identical_results
       tests/test_long_runs.py::test_threads_running_one_loom_get_identical_results)
if [ $# -gt 0 ]; then TESTS=("$@"); fi
# --capture=sys: a sanitizer's report (written to fd 2) is shown, not swallowed with the test's output.
"$VPY" -m pytest -q --capture=sys -p no:cacheprovider -m "not slow" "${TESTS[@]}"
"$VPY" -m fuzz.run --corpus
"$VPY" -m fuzz.run --seconds "${FUZZ_SECONDS_ASAN:-5}" --seed "${FUZZ_SEED:-1}"  # mutants under the sanitizers too
