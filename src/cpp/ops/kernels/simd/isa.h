// The SIMD level of treadle's own kernels (vec_kernels.h): which one runs,
// which ones this CPU and build offer, and the cap a user sets with the
// environment variable TREADLE_ISA (or td.config.set_isa for tests and
// benchmarks). BLAS picks its own kernels (see treadle/_blas.py).
//
// Level names, best first: on x86-64 "avx512", "avx2", "sse4", "ssse3",
// "scalar"; on aarch64 "sve2", "sve", "neon", "scalar".
#pragma once

#include <string>
#include <vector>

namespace treadle::simd {

// The level the kernels run at now, e.g. "avx2".
std::string CurrentLevel();
// Highway's name of the target behind it, e.g. "AVX2" or "AVX3".
std::string CurrentTarget();
// The levels this CPU and this build can run, best first ("scalar" always last).
std::vector<std::string> AvailableLevels();
// Every level name of this CPU family, best first.
std::vector<std::string> KnownLevels();
// Caps the kernels at `level` (a name of KnownLevels()); a cap above what the
// CPU has leaves the best level it has. Throws InvalidArgumentError for an
// unknown name. Not to be called while kernels run on other threads.
void SetLevelCap(const std::string& level);
// Applies TREADLE_ISA when it is set (and non-empty); the same errors.
void ApplyEnvironmentCap();

}  // namespace treadle::simd
