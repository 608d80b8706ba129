#include "graph/fused_elementwise_op.h"

#include <algorithm>

#include "util/errors.h"

namespace treadle::graph {
namespace {

// ---------------------------------------------------------------- the fast path

// The shape of a value on the fast path, relative to the domain shape S (the
// outputs' shape): S itself, one row [1, ..., 1, S.back()] of rank `rank`
// (broadcast along the rows), or a scalar [1, ..., 1] of rank `rank`. Shapes
// of these kinds broadcast the way NumPy's do: the result takes the larger
// kind and the larger rank.
struct Class {
  enum Kind : uint8_t { kScalar, kRow, kFull } kind = kScalar;
  int rank = 0;
  bool operator==(const Class& o) const { return kind == o.kind && rank == o.rank; }
};

bool Classify(const Dims& dims, const Dims& domain, Class* c) {
  const size_t rank = dims.size();
  if (dims == domain) {
    *c = {Class::kFull, static_cast<int>(rank)};
    return true;
  }
  if (rank > domain.size()) return false;
  const bool ones_before_last = std::all_of(dims.begin(), dims.end() - (rank > 0 ? 1 : 0),
                                            [](int64_t n) { return n == 1; });
  if (!ones_before_last) return false;
  if (rank == 0 || dims.back() == 1) {
    *c = {Class::kScalar, static_cast<int>(rank)};
    return true;
  }
  if (dims.back() != domain.back()) return false;
  *c = {Class::kRow, static_cast<int>(rank)};
  return true;
}

int64_t Product(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

struct FastPlan {
  Dims shape;  // of every output
  int64_t rows = 0, width = 0;
  std::vector<simd::FusedLeaf> leaves;
};

// Whether the fast path computes what the ops one by one would, for inputs
// of these shapes (and, with `data`, binds the leaves to the inputs' data).
// The domain is the largest input after the Split (or of all, without one);
// before the Split it is the largest input there, whose last dimension the
// Split divides.
bool PlanFastPath(const FusedProgram& p, const std::vector<const Dims*>& shapes,
                  const std::vector<const float*>* data, FastPlan* plan) {
  const Dims* largest[2] = {nullptr, nullptr};  // [1]: before the Split
  for (const FusedProgram::Leaf& leaf : p.leaves) {
    const Dims* s = shapes[leaf.input];
    const Dims*& l = largest[leaf.before_split ? 1 : 0];
    if (!l || Product(*s) > Product(*l)) l = s;
  }
  Dims before;
  if (p.num_split > 0) {
    if (!largest[1] || largest[1]->empty() || largest[1]->back() % p.num_split != 0) return false;
    before = *largest[1];
    plan->shape = before;
    plan->shape.back() /= p.num_split;
  } else {
    if (!largest[0]) return false;
    plan->shape = *largest[0];
  }
  if (plan->shape.empty() || plan->shape.back() == 0) return false;
  const int64_t width = plan->shape.back();

  const int num_leaves = static_cast<int>(p.leaves.size());
  std::vector<Class> cls(num_leaves + p.instrs.size());
  bool has_rows = false;
  if (data) plan->leaves.resize(num_leaves);
  for (int i = 0; i < num_leaves; ++i) {
    const FusedProgram::Leaf& leaf = p.leaves[i];
    const Dims& domain = leaf.before_split ? before : plan->shape;
    if (!Classify(*shapes[leaf.input], domain, &cls[i])) return false;
    has_rows = has_rows || cls[i].kind == Class::kRow;
    if (!data) continue;
    simd::FusedLeaf& bound = plan->leaves[i];
    bound.data = (*data)[leaf.input];
    bound.scalar = cls[i].kind == Class::kScalar;
    if (bound.scalar) continue;
    bound.data += leaf.block * width;  // the Split's piece `block`
    bound.row_stride = cls[i].kind == Class::kFull ? domain.back() : 0;
  }
  for (size_t k = 0; k < p.instrs.size(); ++k) {
    const simd::FusedInstr& in = p.instrs[k];
    Class& out = cls[num_leaves + k];
    if (in.code != simd::FusedCode::kBinary) {
      out = cls[in.a];
    } else if (p.broadcasts[k]) {
      out = {std::max(cls[in.a].kind, cls[in.b].kind), std::max(cls[in.a].rank, cls[in.b].rank)};
    } else {
      if (!(cls[in.a] == cls[in.b])) return false;  // the op requires equal shapes
      out = cls[in.a];
    }
  }
  for (int32_t r : p.split_pieces) if (cls[r].kind != Class::kFull) return false;
  for (int32_t r : p.out_regs) if (cls[r].kind != Class::kFull) return false;
  plan->rows = Product(plan->shape) / width;
  plan->width = width;
  if (p.num_split == 0 && !has_rows) {  // every input is contiguous: one long row
    plan->width *= plan->rows;
    plan->rows = 1;
  }
  return true;
}

// ---------------------------------------------------------------- one op at a time

[[noreturn]] void RethrowInMember(const FusedProgram::Member& m, const std::exception& e, Code code) {
  throw Error(code, StrCat(e.what(), "\n\t [[node '", m.name, "' (", m.op->name, ")]]"));
}

std::vector<PartialShape> InferOneByOne(const FusedProgram& p, const InferContext& c) {
  std::vector<InferredOutputs> results(p.members.size());
  std::vector<DType> dtypes;
  std::vector<PartialShape> shapes;
  std::vector<const Tensor*> values;
  for (size_t m = 0; m < p.members.size(); ++m) {
    const FusedProgram::Member& member = p.members[m];
    dtypes.clear();
    shapes.clear();
    values.clear();
    for (const FusedProgram::Source& s : member.inputs) {
      switch (s.kind) {
        case FusedProgram::Source::Kind::kInput:
          dtypes.push_back(c.dtypes[s.index]);
          shapes.push_back(c.shapes[s.index]);
          values.push_back(c.value(s.index));
          break;
        case FusedProgram::Source::Kind::kMember:
          dtypes.push_back(results[s.index].dtypes[s.output]);
          shapes.push_back(results[s.index].shapes[s.output]);
          values.push_back(nullptr);
          break;
        case FusedProgram::Source::Kind::kConst:
          dtypes.push_back(p.consts[s.index].dtype());
          shapes.push_back(PartialShape(p.consts[s.index].shape()));
          values.push_back(&p.consts[s.index]);
          break;
      }
    }
    try {
      results[m] = InferOutputs(*member.op, dtypes, shapes, values, member.attrs);
    } catch (const StaticError& e) {
      throw Error(Code::kInvalidArgument, StrCat(e.what(), " [Op:", member.op->name, "]\n\t [[node '", member.name,
                                                 "' (", member.op->name, ")]]"));
    }
  }
  std::vector<PartialShape> out;
  for (const auto& [m, k] : p.outputs) out.push_back(results[m].shapes[k]);
  return out;
}

void RunOneByOne(const FusedProgram& p, KernelContext& ctx) {
  std::vector<std::vector<Tensor>> results(p.members.size());
  std::vector<Tensor> inputs;
  for (size_t m = 0; m < p.members.size(); ++m) {
    const FusedProgram::Member& member = p.members[m];
    inputs.clear();
    for (const FusedProgram::Source& s : member.inputs) {
      switch (s.kind) {
        case FusedProgram::Source::Kind::kInput: inputs.push_back(ctx.input(s.index)); break;
        case FusedProgram::Source::Kind::kMember: inputs.push_back(results[s.index][s.output]); break;
        case FusedProgram::Source::Kind::kConst: inputs.push_back(p.consts[s.index]); break;
      }
    }
    try {
      results[m] = RunOp(*member.op, inputs, member.attrs, nullptr, ctx.allocator);
    } catch (const Error& e) {
      RethrowInMember(member, e, e.code());
    }
  }
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    ctx.set_output(static_cast<int>(k), results[p.outputs[k].first][p.outputs[k].second]);
  }
}

// ---------------------------------------------------------------- the op

std::vector<PartialShape> InferShapes(const FusedProgram& p, const InferContext& c) {
  const bool known = std::all_of(c.shapes.begin(), c.shapes.end(), [](const PartialShape& s) {
    return s.fully_defined();
  });
  if (known) {
    std::vector<const Dims*> dims;
    for (const PartialShape& s : c.shapes) dims.push_back(&s.dims);
    FastPlan plan;
    if (PlanFastPath(p, dims, nullptr, &plan)) return std::vector<PartialShape>(p.outputs.size(), PartialShape(plan.shape));
  }
  return InferOneByOne(p, c);
}

void RunFused(const FusedProgram& p, KernelContext& ctx) {
  std::vector<const Dims*> shapes;
  std::vector<const float*> data;
  for (const Tensor& t : ctx.inputs) {
    shapes.push_back(&t.shape());
    data.push_back(t.data<float>());
  }
  FastPlan plan;
  if (PlanFastPath(p, shapes, &data, &plan)) {
    std::vector<float*> outs;
    for (size_t k = 0; k < p.outputs.size(); ++k) outs.push_back(ctx.allocate_output(static_cast<int>(k), plan.shape).data<float>());
    if (simd::RunFusedF32(p.instrs.data(), static_cast<int>(p.instrs.size()), plan.leaves.data(),
                          static_cast<int>(plan.leaves.size()), p.out_regs.data(), outs.data(),
                          static_cast<int>(outs.size()), plan.rows, plan.width)) {
      return;
    }
  }
  RunOneByOne(p, ctx);
}

}  // namespace

std::unique_ptr<OpDef> MakeFusedElementwiseOp(std::shared_ptr<const FusedProgram> program) {
  auto op = std::make_unique<OpDef>();
  op->name = "_FusedElementwise";
  op->inputs = {{"inputs", true, "", {DType::kFloat32}}};
  op->outputs = {"outputs"};
  const size_t num_outputs = program->outputs.size();
  op->dtype_fn = [num_outputs](const InferContext&) { return std::vector<DType>(num_outputs, DType::kFloat32); };
  op->shape_fn = [program](const InferContext& c) { return InferShapes(*program, c); };
  op->kernel = [program](KernelContext& ctx) { RunFused(*program, ctx); };
  op->doc = "A chain of float32 elementwise ops run as one pass (made by the executor, never by a graph).";
  return op;
}

}  // namespace treadle::graph
