// The node that stands for a fused chain of float32 elementwise ops (built by
// elementwise_fusion.cc): its program, and the OpDef that runs it.
//
// The fast path evaluates the whole chain in one SIMD pass over the data
// (simd/fused_kernels.h), for the shapes that make that a plain row loop:
// every input is the full shape, one row broadcast along the others, or a
// scalar; a Split along the last axis is absorbed (its pieces are read in
// place, and the ops before it are computed piece by piece). Any other case
// (a broadcast along another axis, mismatched shapes, rows narrower than a
// vector) runs the original ops one after the other, with their own shape
// checks and error messages: fusing never changes what a graph computes or
// which errors it raises.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/kernels/simd/fused_kernels.h"
#include "ops/registry.h"

namespace treadle::graph {

struct FusedProgram {
  // ---- the original ops, in topological order (for the general path)
  struct Source {
    enum class Kind : uint8_t { kInput, kMember, kConst };
    Kind kind = Kind::kInput;
    int index = 0;   // fused node input, member, or constant
    int output = 0;  // output of the member
  };
  struct Member {
    std::string name;
    const OpDef* op = nullptr;
    AttrMap attrs;
    std::vector<Source> inputs;
  };
  std::vector<Member> members;
  std::vector<Tensor> consts;               // the Split's axis
  std::vector<std::pair<int, int>> outputs;  // (member, output) of each fused output

  // ---- the one-pass program (simd::RunFusedF32's registers)
  struct Leaf {
    int input = 0;           // fused node input
    int block = 0;           // before the Split: which of its pieces this copy of the leaf reads
    bool before_split = false;
  };
  std::vector<Leaf> leaves;
  std::vector<simd::FusedInstr> instrs;
  std::vector<char> broadcasts;     // per instruction: broadcasts its operands (else needs equal shapes)
  std::vector<int32_t> split_pieces;  // registers the Split cuts: they must have the full shape
  std::vector<int32_t> out_regs;      // register of each fused output
  int num_split = 0;                  // pieces of the absorbed Split; 0 when there is none
};

// An OpDef named _FusedElementwise whose kernel runs `program`. It is not in
// the registry: no graph, file or eager call can name it, so nothing but the
// fusion pass builds its programs.
std::unique_ptr<OpDef> MakeFusedElementwiseOp(std::shared_ptr<const FusedProgram> program);

}  // namespace treadle::graph
