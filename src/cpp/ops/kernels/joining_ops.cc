// Joining tensors: ConcatV2 (along an existing axis) and Pack (along a new
// one). Both copy each input's contiguous rows with one memcpy per row.
#include "ops/narrow_types.h"
#include "ops/kernels/array_util.h"

namespace treadle {
namespace {

// ---- ConcatV2 ---------------------------------------------------------------

PartialShape ConcatShape(const InferContext& c) {
  const int n = c.num_inputs() - 1;
  if (n < 1) ThrowValueError(c.op.name, ": 'values' must hold at least one tensor");
  auto axis = ScalarIntInput(c, n, "axis");
  int first_known = -1;
  for (int i = 0; i < n; ++i) {
    if (!c.shapes[i].known_rank) continue;
    if (first_known < 0) {
      first_known = i;
    } else if (c.shapes[i].rank() != c.shapes[first_known].rank()) {
      ThrowValueError("ConcatOp : Ranks of all input tensors should match: shape[", first_known, "] = ",
                      DimsToString(c.shapes[first_known].dims), " vs. shape[", i, "] = ",
                      DimsToString(c.shapes[i].dims), " (", c.op.name, ")");
    }
  }
  if (first_known < 0) return PartialShape::Unknown();
  const int64_t rank = c.shapes[first_known].rank();
  if (rank == 0) ThrowValueError(c.op.name, ": can't concatenate scalars (use tf.stack instead)");
  if (!axis) return PartialShape::UnknownOfRank(static_cast<int>(rank));
  if (*axis < -rank || *axis >= rank) {
    ThrowValueError("ConcatOp : Expected concatenating dimensions in the range [", -rank, ", ", rank,
                    "), but got ", *axis, " (", c.op.name, ")");
  }
  const int64_t a = *axis < 0 ? *axis + rank : *axis;
  Dims out(rank, kUnknownDim);
  std::vector<int> source(rank, -1);  // the input that fixed each non-axis dimension
  int64_t axis_sum = 0;
  for (int i = 0; i < n; ++i) {
    const PartialShape& s = c.shapes[i];
    if (!s.known_rank) {
      axis_sum = kUnknownDim;
      continue;
    }
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t v = s.dims[d];
      if (d == a) {
        axis_sum = (axis_sum < 0 || v < 0) ? kUnknownDim : axis_sum + v;
      } else if (v >= 0) {
        if (out[d] < 0) {
          out[d] = v;
          source[d] = i;
        } else if (out[d] != v) {
          ThrowValueError("ConcatOp : Dimension ", d, " in both shapes must be equal: shape[", source[d], "] = ",
                          DimsToString(c.shapes[source[d]].dims), " vs. shape[", i, "] = ", DimsToString(s.dims),
                          " (", c.op.name, ")");
        }
      }
    }
  }
  out[a] = axis_sum;
  CheckedProduct(c.op, out);
  return PartialShape(out);
}

void ConcatKernel(KernelContext& ctx) {
  const int n = ctx.num_inputs() - 1;
  if (n == 1) {
    ctx.set_output(0, ctx.input(0));
    return;
  }
  Tensor& out = ctx.allocate_output(0);
  if (out.num_elements() == 0) return;
  const int64_t rank = out.rank();
  int64_t axis = ReadInts(ctx.input(n))[0];
  if (axis < 0) axis += rank;
  const int64_t outer = DimProduct(out.shape(), 0, static_cast<int>(axis));
  std::vector<const char*> srcs(n);
  std::vector<int64_t> chunks(n);
  for (int i = 0; i < n; ++i) {
    srcs[i] = static_cast<const char*>(ctx.input(i).raw_data());
    chunks[i] = ctx.input(i).num_elements() / outer;
  }
  InterleaveCopy(out.dtype(), outer, srcs, chunks, static_cast<char*>(out.raw_data()));
}

OpDef MakeConcat() {
  OpDef op;
  op.name = "ConcatV2";
  op.inputs = {{"values", true, "T", kAllTypes}, {"axis", false, "Tidx", kIndexTypes}};
  op.outputs = {"output"};
  op.dtype_fn = [](const InferContext& c) {
    if (c.num_inputs() < 2) ThrowValueError(c.op.name, ": 'values' must hold at least one tensor");
    return std::vector<DType>{c.dtypes[0]};
  };
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{ConcatShape(c)}; };
  op.kernel = ConcatKernel;
  op.doc = "Concatenates `values` along dimension `axis`.";
  return op;
}

// ---- Pack -------------------------------------------------------------------

PartialShape PackShape(const InferContext& c) {
  const int n = c.num_inputs();
  if (n < 1) ThrowValueError(c.op.name, ": 'values' must hold at least one tensor");
  PartialShape merged;
  int source = -1;
  for (int i = 0; i < n; ++i) {
    const PartialShape& s = c.shapes[i];
    if (!s.known_rank) continue;
    if (source < 0) {
      merged = s;
      source = i;
      continue;
    }
    bool compatible = s.rank() == merged.rank();
    for (int d = 0; compatible && d < s.rank(); ++d) {
      if (s.dims[d] >= 0 && merged.dims[d] >= 0 && s.dims[d] != merged.dims[d]) compatible = false;
      else if (merged.dims[d] < 0) merged.dims[d] = s.dims[d];
    }
    if (!compatible) {
      ThrowValueError(c.op.name, ": shapes of all inputs must match: values[", source, "].shape = ",
                      c.shapes[source].ToString(), " != values[", i, "].shape = ", s.ToString());
    }
  }
  if (!merged.known_rank) return PartialShape::Unknown();
  const int64_t rank = merged.rank() + 1;
  const int64_t axis = c.attrs.GetInt("axis");
  if (axis < -rank || axis >= rank) {
    ThrowValueError(c.op.name, ": argument `axis` = ", axis, " not in range [", -rank, ", ", rank, ")");
  }
  CheckOutputRank(c.op, rank);
  Dims out = merged.dims;
  out.insert(out.begin() + (axis < 0 ? axis + rank : axis), n);
  CheckedProduct(c.op, out);
  return PartialShape(out);
}

void PackKernel(KernelContext& ctx) {
  const int n = ctx.num_inputs();
  Tensor& out = ctx.allocate_output(0);
  if (out.num_elements() == 0) return;
  int64_t axis = ctx.attrs.GetInt("axis");
  if (axis < 0) axis += out.rank();
  const int64_t outer = DimProduct(out.shape(), 0, static_cast<int>(axis));
  std::vector<const char*> srcs(n);
  std::vector<int64_t> chunks(n, ctx.input(0).num_elements() / outer);
  for (int i = 0; i < n; ++i) srcs[i] = static_cast<const char*>(ctx.input(i).raw_data());
  InterleaveCopy(out.dtype(), outer, srcs, chunks, static_cast<char*>(out.raw_data()));
}

OpDef MakePack() {
  OpDef op;
  op.name = "Pack";
  op.inputs = {{"values", true, "T", kAllTypes}};
  op.outputs = {"output"};
  op.attrs = {{"axis", AttrType::kInt, AttrValue(int64_t{0})}};
  op.dtype_fn = [](const InferContext& c) {
    if (c.num_inputs() < 1) ThrowValueError(c.op.name, ": 'values' must hold at least one tensor");
    return std::vector<DType>{c.dtypes[0]};
  };
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{PackShape(c)}; };
  op.kernel = PackKernel;
  op.doc = "Stacks the same-shaped tensors of `values` along a new dimension `axis`.";
  return op;
}

OpRegistrar concat_op(WithNarrowTypes(MakeConcat(), kNarrowTypes));
OpRegistrar pack_op(WithNarrowTypes(MakePack(), kNarrowTypes));

}  // namespace
}  // namespace treadle
