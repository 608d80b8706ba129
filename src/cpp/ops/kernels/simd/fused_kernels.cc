// Highway implementation of fused_kernels.h, compiled once per SIMD target
// (hwy/foreach_target.h re-includes it); RunFusedF32 at the end dispatches
// to the target isa.cc allows.
//
// The evaluator walks the data in tiles (a few rows by up to kChunk columns)
// and runs every instruction over the whole tile before the next one: each
// op is a straight-line loop over independent vectors (as in the separate
// kernels), the interpretation costs one switch per instruction and tile,
// and the tile's intermediate values stay in L1. A row whose width is not a
// multiple of the vector ends with one vector that overlaps the one before:
// it recomputes a few elements (the same values) instead of going through a
// buffer, which needs width >= one vector.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/kernels/simd/fused_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cstdint>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "ops/kernels/simd/fused_kernels.h"
#include "ops/kernels/simd/vec_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace treadle::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// A tile is a block of rows by at most kChunk columns; the scratch values of
// one tile (one block per instruction) aim to fit in kScratchBytes of L1.
constexpr size_t kChunk = 512;
constexpr size_t kScratchBytes = 16 * 1024;

// Where a register's values in the current tile are: element (r, c) of the
// tile is p[r * stride + c].
struct Operand {
  const float* p;
  size_t stride;
};

// Applies `f` to every vector of a rows x cols tile (cols >= one vector): the
// whole vectors of each row, then one ending at the row's end, overlapping
// the last whole one when cols is not a multiple of the vector.
template <class F>
HWY_INLINE void ForTile(size_t rows, size_t cols, F f) {
  const size_t lanes = hn::Lanes(hn::ScalableTag<float>());
  for (size_t r = 0; r < rows; ++r) {
    size_t c = 0;
    for (; c + lanes <= cols; c += lanes) f(r, c);
    if (c < cols) f(r, cols - lanes);
  }
}

template <class F>
HWY_INLINE void TileUnary(Operand a, float* out, size_t out_stride, size_t rows, size_t cols, F f) {
  const hn::ScalableTag<float> d;
  ForTile(rows, cols, [&](size_t r, size_t c) {
    hn::StoreU(f(d, hn::LoadU(d, a.p + r * a.stride + c)), d, out + r * out_stride + c);
  });
}

template <Binary kOp>
HWY_INLINE void TileBinary(Operand a, Operand b, float* out, size_t out_stride, size_t rows, size_t cols) {
  const hn::ScalableTag<float> d;
  ForTile(rows, cols, [&](size_t r, size_t c) {
    const auto va = hn::LoadU(d, a.p + r * a.stride + c);
    const auto vb = hn::LoadU(d, b.p + r * b.stride + c);
    hn::StoreU(BinaryVec<kOp>(d, va, vb), d, out + r * out_stride + c);
  });
}

template <Unary kOp>
HWY_INLINE void TileUnaryMath(Operand a, float* out, size_t out_stride, size_t rows, size_t cols) {
  TileUnary(a, out, out_stride, rows, cols, [](auto d, auto v) { return UnaryVec<kOp>(d, v); });
}

// One instruction over a tile. The operations are those of the separate
// kernels: vec_math-inl.h for the math and arithmetic; Neg, Square and Relu
// are exact, as in elementwise.cc.
void RunInstr(const FusedInstr& in, Operand a, Operand b, float* out, size_t os, size_t rows, size_t cols) {
  switch (in.code) {
    case FusedCode::kUnary:
      switch (in.unary) {
        case Unary::kExp: return TileUnaryMath<Unary::kExp>(a, out, os, rows, cols);
        case Unary::kLog: return TileUnaryMath<Unary::kLog>(a, out, os, rows, cols);
        case Unary::kTanh: return TileUnaryMath<Unary::kTanh>(a, out, os, rows, cols);
        case Unary::kSigmoid: return TileUnaryMath<Unary::kSigmoid>(a, out, os, rows, cols);
      }
      return;
    case FusedCode::kBinary:
      switch (in.binary) {
        case Binary::kAdd: return TileBinary<Binary::kAdd>(a, b, out, os, rows, cols);
        case Binary::kSub: return TileBinary<Binary::kSub>(a, b, out, os, rows, cols);
        case Binary::kMul: return TileBinary<Binary::kMul>(a, b, out, os, rows, cols);
        case Binary::kDiv: return TileBinary<Binary::kDiv>(a, b, out, os, rows, cols);
        case Binary::kMax: return TileBinary<Binary::kMax>(a, b, out, os, rows, cols);
        case Binary::kMin: return TileBinary<Binary::kMin>(a, b, out, os, rows, cols);
        case Binary::kSigmoidGrad: return TileBinary<Binary::kSigmoidGrad>(a, b, out, os, rows, cols);
        case Binary::kTanhGrad: return TileBinary<Binary::kTanhGrad>(a, b, out, os, rows, cols);
      }
      return;
    case FusedCode::kNeg:
      return TileUnary(a, out, os, rows, cols, [](auto, auto v) { return hn::Neg(v); });
    case FusedCode::kSquare:
      return TileUnary(a, out, os, rows, cols, [](auto, auto v) { return hn::Mul(v, v); });
    case FusedCode::kRelu:
      return TileUnary(a, out, os, rows, cols, [](auto d, auto v) {
        const auto zero = hn::Zero(d);
        return hn::IfThenElse(hn::Or(hn::Gt(v, zero), hn::IsNaN(v)), v, zero);  // NaN stays NaN
      });
  }
}

bool RunFusedF32(const FusedInstr* instrs, int num_instrs, const FusedLeaf* leaves, int num_leaves,
                 const int32_t* out_regs, float* const* outs, int num_outs, int64_t rows, int64_t width) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  if (width < static_cast<int64_t>(lanes)) return false;
  const size_t w = static_cast<size_t>(width);
  const int num_regs = num_leaves + num_instrs;
  std::vector<int> out_of(num_regs, -1);
  for (int k = 0; k < num_outs; ++k) out_of[out_regs[k]] = k;
  // Scratch: a tile for each instruction that is not an output, and one
  // chunk of each scalar leaf's value (read with stride 0).
  const size_t chunk = std::min(w, kChunk);
  int num_scratch = 0, num_scalars = 0;
  for (int k = 0; k < num_instrs; ++k) num_scratch += out_of[num_leaves + k] < 0;
  for (int i = 0; i < num_leaves; ++i) num_scalars += leaves[i].scalar;
  const size_t block_rows = std::max<size_t>(
      1, std::min<size_t>(static_cast<size_t>(rows), kScratchBytes / (sizeof(float) * chunk * std::max(num_scratch, 1))));
  const size_t tile = block_rows * chunk;
  hwy::AlignedFreeUniquePtr<float[]> scratch =
      hwy::AllocateAligned<float>(num_scratch * tile + num_scalars * chunk + 1);
  std::vector<float*> home(num_regs, nullptr);  // scratch tile of each register that has one
  size_t used = 0;
  for (int i = 0; i < num_leaves; ++i) {
    if (!leaves[i].scalar) continue;
    home[i] = scratch.get() + used;
    used += chunk;
    for (size_t c = 0; c < chunk; ++c) home[i][c] = leaves[i].data[0];
  }
  for (int k = 0; k < num_instrs; ++k) {
    if (out_of[num_leaves + k] >= 0) continue;
    home[num_leaves + k] = scratch.get() + used;
    used += tile;
  }
  std::vector<Operand> operand(num_regs);
  for (size_t r0 = 0; r0 < static_cast<size_t>(rows); r0 += block_rows) {
    const size_t nr = std::min(block_rows, static_cast<size_t>(rows) - r0);
    for (size_t c0 = 0; c0 < w; c0 += chunk) {
      // The last chunk is at least one vector wide: it may start earlier and
      // overlap the one before.
      const size_t start = std::min(c0, w - std::max(lanes, std::min(chunk, w - c0)));
      const size_t cols = std::min(chunk, w - start);
      for (int i = 0; i < num_leaves; ++i) {
        const FusedLeaf& leaf = leaves[i];
        operand[i] = leaf.scalar ? Operand{home[i], 0}
                                 : Operand{leaf.data + r0 * leaf.row_stride + start, static_cast<size_t>(leaf.row_stride)};
      }
      for (int k = 0; k < num_instrs; ++k) {
        const int reg = num_leaves + k;
        // An output is computed in place (later instructions read it there);
        // anything else in its scratch tile.
        float* dst = out_of[reg] >= 0 ? outs[out_of[reg]] + r0 * w + start : home[reg];
        const size_t stride = out_of[reg] >= 0 ? w : chunk;
        const FusedInstr& in = instrs[k];
        RunInstr(in, operand[in.a], operand[in.b], dst, stride, nr, cols);
        operand[reg] = Operand{dst, stride};
      }
    }
  }
  return true;
}

}  // namespace HWY_NAMESPACE
}  // namespace treadle::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace treadle::simd {

HWY_EXPORT(RunFusedF32);

bool RunFusedF32(const FusedInstr* instrs, int num_instrs, const FusedLeaf* leaves, int num_leaves,
                 const int32_t* out_regs, float* const* outs, int num_outs, int64_t rows, int64_t width) {
  return HWY_DYNAMIC_DISPATCH(RunFusedF32)(instrs, num_instrs, leaves, num_leaves, out_regs, outs, num_outs, rows, width);
}

}  // namespace treadle::simd
#endif  // HWY_ONCE
