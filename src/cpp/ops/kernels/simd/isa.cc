#include "ops/kernels/simd/isa.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>

#include "hwy/highway.h"
#include "hwy/targets.h"
#include "util/errors.h"

namespace treadle::simd {
namespace {

// The targets the cap disables (Highway keeps only the last DisableTargets).
std::atomic<int64_t> g_disabled{0};

struct Level {
  const char* name;
  int64_t targets;  // Highway target bits that belong to this level
};

// Best first. A bit that this Highway version does not define is 0 here.
#ifndef HWY_AVX3_ZEN4
#define HWY_AVX3_ZEN4 0
#endif
#ifndef HWY_AVX3_SPR
#define HWY_AVX3_SPR 0
#endif
#ifndef HWY_SVE2_128
#define HWY_SVE2_128 0
#endif
#ifndef HWY_SVE_256
#define HWY_SVE_256 0
#endif
#ifndef HWY_EMU128
#define HWY_EMU128 0
#endif

const std::vector<Level>& Levels() {
#if HWY_ARCH_ARM_A64 || HWY_ARCH_ARM_V7
  static const std::vector<Level> levels = {
      {"sve2", HWY_SVE2 | HWY_SVE2_128},
      {"sve", HWY_SVE | HWY_SVE_256},
      {"neon", HWY_NEON},
      {"scalar", HWY_SCALAR | HWY_EMU128},
  };
#elif HWY_ARCH_X86
  static const std::vector<Level> levels = {
      {"avx512", HWY_AVX3 | HWY_AVX3_DL | HWY_AVX3_ZEN4 | HWY_AVX3_SPR},
      {"avx2", HWY_AVX2},
      {"sse4", HWY_SSE4},
      {"ssse3", HWY_SSSE3},
      {"scalar", HWY_SCALAR | HWY_EMU128},
  };
#else
  static const std::vector<Level> levels = {{"scalar", HWY_SCALAR | HWY_EMU128}};
#endif
  return levels;
}

// The targets compiled into treadle (HWY_TARGETS, as in vec_kernels.cc) that
// the CPU supports and the cap allows; better targets have lower bits.
int64_t UsableTargets() { return hwy::SupportedTargets() & HWY_TARGETS; }

int64_t BestTarget() {
  const int64_t usable = UsableTargets();
  return usable & -usable;  // the lowest set bit
}

const Level* LevelOf(int64_t target) {
  for (const Level& level : Levels()) {
    if (level.targets & target) return &level;
  }
  return nullptr;
}

std::string JoinNames() {
  std::string out;
  for (const Level& level : Levels()) out += std::string(out.empty() ? "" : ", ") + level.name;
  return out;
}

}  // namespace

std::string CurrentTarget() { return hwy::TargetName(BestTarget()); }

std::string CurrentLevel() {
  const Level* level = LevelOf(BestTarget());
  return level ? level->name : "scalar";
}

std::vector<std::string> KnownLevels() {
  std::vector<std::string> out;
  for (const Level& level : Levels()) out.push_back(level.name);
  return out;
}

std::vector<std::string> AvailableLevels() {
  // What the CPU has, whatever the cap: lifted for the question, then put back.
  hwy::DisableTargets(0);
  const int64_t usable = UsableTargets();
  hwy::DisableTargets(g_disabled.load());
  std::vector<std::string> out;
  for (const Level& level : Levels()) {
    if ((level.targets & usable) || std::string(level.name) == "scalar") out.push_back(level.name);
  }
  return out;
}

void SetLevelCap(const std::string& name) {
  int64_t disabled = 0;
  bool found = false;
  for (const Level& level : Levels()) {
    if (name == level.name) {
      found = true;
      break;
    }
    disabled |= level.targets;
  }
  if (!found) {
    ThrowInvalidArgument("unknown SIMD level '", name, "' (TREADLE_ISA / td.config.set_isa); this CPU family has: ",
                         JoinNames());
  }
  // Replaces any earlier cap; the dispatch tables choose again on their next call.
  g_disabled.store(disabled);
  hwy::DisableTargets(disabled);
}

void ApplyEnvironmentCap() {
  const char* env = std::getenv("TREADLE_ISA");
  if (env != nullptr && *env != '\0') SetLevelCap(env);
}

}  // namespace treadle::simd
