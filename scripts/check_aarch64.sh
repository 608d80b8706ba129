#!/usr/bin/env bash
# Checks that the C++ core compiles for aarch64 (ARM Linux: Graviton, Ampere,
# Apple-silicon VMs): every source of src/cpp is compiled, objects only (there
# is no aarch64 libprotobuf or Python to link against here), with Debian's
# cross compiler, which is installed when missing. The SIMD kernels then build
# for Highway's NEON and SVE targets. Run by .ci/run.
#
#   bash scripts/check_aarch64.sh            # after scripts/setup.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CXX=aarch64-linux-gnu-g++
if ! command -v "$CXX" >/dev/null; then
  echo "check_aarch64: installing g++-aarch64-linux-gnu"
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -q
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends g++-aarch64-linux-gnu
fi

OUT=build/aarch64
mkdir -p "$OUT/proto"
# The generated protobuf sources are architecture-neutral C++.
protoc -I proto --cpp_out "$OUT/proto" proto/treadle/*.proto
VPY=.venv/bin/python
PY_INCLUDE=$("$VPY" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
PYBIND_INCLUDE=$("$VPY" -c "import pybind11; print(pybind11.get_include())")
BLAS_INCLUDE=$("$VPY" -c "import scipy_openblas32 as s; print(s.get_include_dir())")
FLAGS=(-std=c++17 -O1 -fPIC -Wall -Wextra -Wno-unused-parameter -Werror=attributes
       -DBLAS_SYMBOL_PREFIX=scipy_ -Isrc/cpp -I"$OUT/proto" -I"$BLAS_INCLUDE")

# ccache, as for the native build: CI's reruns compile only what changed.
LAUNCHER=()
if command -v ccache >/dev/null; then LAUNCHER=(ccache); export CCACHE_BASEDIR="$PWD"; fi

mapfile -t SOURCES < <(find src/cpp "$OUT/proto" -name '*.cc' | sort)
echo "check_aarch64: compiling ${#SOURCES[@]} sources with $($CXX --version | head -1)"
compile() {
  local src=$1 obj
  obj="$OUT/obj/${src//\//_}.o"
  local extra=()
  case "$src" in src/cpp/python/*) extra=(-I"$PY_INCLUDE" -I"$PYBIND_INCLUDE" -fvisibility=hidden) ;; esac
  case "$src" in "$OUT"/proto/*) extra=(-w) ;; esac
  "${LAUNCHER[@]}" "$CXX" "${FLAGS[@]}" "${extra[@]}" -c "$src" -o "$obj" || { echo "check_aarch64: FAILED $src" >&2; return 1; }
}
mkdir -p "$OUT/obj"
failed=0
# Two at a time: the machine has two cores.
for src in "${SOURCES[@]}"; do
  compile "$src" &
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || failed=1; done
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
wait || failed=1
if [ "$failed" -ne 0 ]; then
  echo "check_aarch64: the core does not compile for aarch64" >&2
  exit 1
fi
echo "check_aarch64: all ${#SOURCES[@]} sources compile for aarch64"
