"""Choosing OpenBLAS's kernels before the core loads it.

OpenBLAS picks its kernels from the CPU's model number. On a CPU it does not
know (newer AMD EPYC generations, and CPUs behind hypervisors that report a
generic model) it falls back to its AVX2 ("Haswell") kernels even where
AVX-512 is there: on this project's benchmark machine that runs sgemm, and
so every matmul, TreeLSTM step and MLP step, at about two thirds of the
speed of its AVX-512 ("SkylakeX") kernels.

OpenBLAS reads OPENBLAS_CORETYPE once, when the library loads (with
treadle's core). So before that, where the CPU and the OS support the
AVX-512 subsets those kernels use, treadle sets it for the moment of the
load, and then restores the environment. It leaves the choice to OpenBLAS
when the user has set OPENBLAS_CORETYPE (set it to Haswell, for example, to
opt out), when TREADLE_ISA caps treadle's own kernels below AVX-512, off
Linux, or when the library is already loaded."""

import os

_SKYLAKEX_FEATURES = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
_LIBRARY = "libscipy_openblas.so"


def _cpu_flags():
    """The CPU feature flags the kernel reports (and so has enabled), or an empty set."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _library_loaded():
    try:
        with open("/proc/self/maps") as f:
            return any(_LIBRARY in line for line in f)
    except OSError:
        return False


def _isa_cap_below_avx512():
    """Whether TREADLE_ISA caps treadle's kernels below AVX-512: then BLAS is
    not handed its AVX-512 kernels either, so that a run capped at avx2 on an
    AVX-512 machine measures what an AVX2 machine runs (OpenBLAS keeps its own
    choice; set OPENBLAS_CORETYPE=Haswell to be sure of it)."""
    cap = os.environ.get("TREADLE_ISA", "").strip()
    return bool(cap) and cap != "avx512"


def core_type_to_set():
    """The OPENBLAS_CORETYPE to load the library with, or None to leave it be."""
    if "OPENBLAS_CORETYPE" in os.environ or not _SKYLAKEX_FEATURES <= _cpu_flags() or _library_loaded():
        return None
    if _isa_cap_below_avx512():
        return None
    return "SkylakeX"


class chosen_kernels:
    """A context for loading the core: OPENBLAS_CORETYPE set as chosen, then
    the environment as it was."""

    def __enter__(self):
        self.core_type = core_type_to_set()
        if self.core_type:
            os.environ["OPENBLAS_CORETYPE"] = self.core_type
        return self

    def __exit__(self, *exc):
        if self.core_type:
            os.environ.pop("OPENBLAS_CORETYPE", None)
        return False
