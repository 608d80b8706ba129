// The SIMD evaluator of fused elementwise programs (graph/elementwise_fusion.h
// builds them): a chain of float32 elementwise ops run as one pass over the
// data, each op computing exactly what its own kernel computes (the vector
// math is shared, vec_math-inl.h), so fusing changes no result bit.
#pragma once

#include <cstdint>

#include "ops/kernels/simd/vec_kernels.h"

namespace treadle::simd {

// What one instruction of a fused program does.
enum class FusedCode : uint8_t {
  kUnary,   // Unary `unary` of register a
  kBinary,  // Binary `binary` of registers a and b
  kNeg,     // -a
  kSquare,  // a * a
  kRelu,    // a > 0 or NaN ? a : +0
};

// Registers 0 .. num_leaves-1 are the program's leaves; instruction i writes
// register num_leaves + i and reads only lower registers.
struct FusedInstr {
  FusedCode code = FusedCode::kUnary;
  Unary unary = Unary::kExp;
  Binary binary = Binary::kAdd;
  int32_t a = 0, b = 0;
};

// Where a leaf's values are: element (r, c) of the rows x width block is
// data[r * row_stride + c] (row_stride 0: one row broadcast to every row),
// or data[0] for every element when `scalar`.
struct FusedLeaf {
  const float* data = nullptr;
  int64_t row_stride = 0;
  bool scalar = false;
};

// Runs the program over a rows x width block: out[k][r * width + c] =
// register out_regs[k] at (r, c), each register an output at most once.
// Outputs must not overlap the leaves. Returns false, having done nothing,
// when a row is narrower than one vector of the SIMD level in use (the
// caller then runs the ops one by one).
bool RunFusedF32(const FusedInstr* instrs, int num_instrs, const FusedLeaf* leaves, int num_leaves,
                 const int32_t* out_regs, float* const* outs, int num_outs, int64_t rows, int64_t width);

}  // namespace treadle::simd
