// Splitting a tensor: Unpack (into slices along an axis, which disappears),
// Split (into equal pieces) and SplitV (into pieces of given sizes). Each
// input row moves to the outputs as one memcpy per piece.
#include "ops/narrow_types.h"
#include "ops/kernels/array_util.h"

namespace treadle {
namespace {

std::vector<PartialShape> Repeat(const PartialShape& s, size_t n) { return std::vector<PartialShape>(n, s); }

// Allocates every output with its inferred shape and copies the pieces of
// `in` along `axis` into them; piece k has out_shapes[k].dims[axis] (or 1 for
// Unpack, whose outputs lack the axis) slices.
void SplitIntoOutputs(KernelContext& ctx, const Tensor& in, int64_t axis, const std::vector<int64_t>& pieces) {
  const size_t n = ctx.out_dtypes.size();
  std::vector<char*> dsts(n);
  for (size_t k = 0; k < n; ++k) dsts[k] = static_cast<char*>(ctx.allocate_output(static_cast<int>(k)).raw_data());
  if (in.num_elements() == 0) return;
  const int64_t outer = DimProduct(in.shape(), 0, static_cast<int>(axis));
  const int64_t inner = DimProduct(in.shape(), static_cast<int>(axis) + 1, in.rank());
  std::vector<int64_t> chunks(n);
  for (size_t k = 0; k < n; ++k) chunks[k] = pieces[k] * inner;
  DeinterleaveCopy(in.dtype(), outer, static_cast<const char*>(in.raw_data()), dsts, chunks);
}

int64_t NormalizeSplitAxis(const OpDef& op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    ThrowValueError(op.name, ": axis = ", axis, " not in [", -rank, ", ", rank, ") for an input of rank ", rank);
  }
  return axis < 0 ? axis + rank : axis;
}

// ---- Unpack -----------------------------------------------------------------

std::vector<PartialShape> UnpackShape(const InferContext& c) {
  const int64_t num = c.attrs.GetInt("num");
  const PartialShape& in = c.shapes[0];
  if (!in.known_rank) return Repeat(PartialShape::Unknown(), num);
  if (in.rank() == 0) ThrowValueError(c.op.name, ": input must have rank at least 1, got a scalar");
  const int64_t a = NormalizeSplitAxis(c.op, c.attrs.GetInt("axis"), in.rank());
  if (in.dims[a] >= 0 && in.dims[a] != num) {
    ThrowValueError(c.op.name, ": input shape axis ", a, " must equal ", num, " (num), got shape ", in.ToString());
  }
  Dims out = in.dims;
  out.erase(out.begin() + a);
  return Repeat(PartialShape(out), num);
}

OpDef MakeUnpack() {
  OpDef op;
  op.name = "Unpack";
  op.inputs = {{"value", false, "T", kAllTypes}};
  op.outputs = {"output"};
  op.attrs = {{"num", AttrType::kInt, std::nullopt}, {"axis", AttrType::kInt, AttrValue(int64_t{0})}};
  op.dtype_fn = RepeatedDTypeOfInput(0, "num");
  op.shape_fn = UnpackShape;
  op.kernel = [](KernelContext& ctx) {
    const Tensor& in = ctx.input(0);
    int64_t axis = ctx.attrs.GetInt("axis");
    if (axis < 0) axis += in.rank();
    SplitIntoOutputs(ctx, in, axis, std::vector<int64_t>(ctx.out_dtypes.size(), 1));
  };
  op.doc = "The `num` slices of `value` along `axis`, each without that dimension.";
  return op;
}

// ---- Split ------------------------------------------------------------------

DTypeFn SplitDTypes(int value_input) {
  DTypeFn repeated = RepeatedDTypeOfInput(value_input, "num_split");
  return [repeated](const InferContext& c) {
    if (c.attrs.GetInt("num_split") < 1) {
      ThrowValueError(c.op.name, ": num_split must be >= 1, got ", c.attrs.GetInt("num_split"));
    }
    return repeated(c);
  };
}

std::vector<PartialShape> SplitShape(const InferContext& c) {
  const int64_t num = c.attrs.GetInt("num_split");
  auto axis = ScalarIntInput(c, 0, "axis");
  const PartialShape& in = c.shapes[1];
  if (!in.known_rank) return Repeat(PartialShape::Unknown(), num);
  if (!axis) return Repeat(PartialShape::UnknownOfRank(in.rank()), num);
  const int64_t a = NormalizeSplitAxis(c.op, *axis, in.rank());
  Dims out = in.dims;
  if (in.dims[a] >= 0) {
    if (in.dims[a] % num != 0) {
      ThrowValueError("Number of ways to split should evenly divide the split dimension, but got split_dim ", a,
                      " (size = ", in.dims[a], ") and num_split ", num, " (", c.op.name, ")");
    }
    out[a] = in.dims[a] / num;
  }
  return Repeat(PartialShape(out), num);
}

OpDef MakeSplit() {
  OpDef op;
  op.name = "Split";
  op.inputs = {{"axis", false, "", kIndexTypes}, {"value", false, "T", kAllTypes}};
  op.outputs = {"output"};
  op.attrs = {{"num_split", AttrType::kInt, std::nullopt}};
  op.dtype_fn = SplitDTypes(1);
  op.shape_fn = SplitShape;
  op.kernel = [](KernelContext& ctx) {
    const Tensor& in = ctx.input(1);
    if (ctx.out_dtypes.size() == 1) {
      ctx.set_output(0, in);
      return;
    }
    int64_t axis = ReadInts(ctx.input(0))[0];
    if (axis < 0) axis += in.rank();
    const int64_t piece = in.dim(static_cast<int>(axis)) / static_cast<int64_t>(ctx.out_dtypes.size());
    SplitIntoOutputs(ctx, in, axis, std::vector<int64_t>(ctx.out_dtypes.size(), piece));
  };
  op.doc = "Splits `value` along `axis` into `num_split` equal pieces.";
  return op;
}

// ---- SplitV -----------------------------------------------------------------

// Checks the requested sizes: num_split of them, at most one -1, no other negative.
void CheckSizeSplits(const OpDef& op, const std::vector<int64_t>& sizes, int64_t num) {
  if (static_cast<int64_t>(sizes.size()) != num) {
    ThrowValueError(op.name, ": size_splits has ", sizes.size(), " elements but num_split is ", num);
  }
  int unknown = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      if (unknown >= 0) {
        ThrowValueError(op.name, ": only one dimension of size_splits can have a value of -1; found at ", unknown,
                        " and ", i);
      }
      unknown = static_cast<int>(i);
    } else if (sizes[i] < 0 || sizes[i] > kMaxElements) {
      ThrowValueError(op.name, ": size_splits[", i, "] = ", sizes[i], " must be >= 0 (or -1)");
    }
  }
}

std::vector<PartialShape> SplitVShape(const InferContext& c) {
  const int64_t num = c.attrs.GetInt("num_split");
  const PartialShape& in = c.shapes[0];
  CheckInputRank(c, 1, 1, "size_splits");
  if (c.shapes[1].known_rank && c.shapes[1].dims[0] >= 0 && c.shapes[1].dims[0] != num) {
    ThrowValueError(c.op.name, ": size_splits has ", c.shapes[1].dims[0], " elements but num_split is ", num);
  }
  auto sizes = c.IntValues(1);
  if (sizes) CheckSizeSplits(c.op, *sizes, num);
  auto axis = ScalarIntInput(c, 2, "axis");
  if (!in.known_rank) return Repeat(PartialShape::Unknown(), num);
  if (!axis) return Repeat(PartialShape::UnknownOfRank(in.rank()), num);
  const int64_t a = NormalizeSplitAxis(c.op, *axis, in.rank());
  if (!sizes) {
    Dims out = in.dims;
    out[a] = kUnknownDim;
    return Repeat(PartialShape(out), num);
  }
  const int64_t dim = in.dims[a];
  int64_t known_sum = 0;
  int unknown = -1;
  for (int64_t k = 0; k < num; ++k) {
    if ((*sizes)[k] == -1) unknown = static_cast<int>(k);
    else known_sum += (*sizes)[k];
  }
  std::vector<int64_t> resolved = *sizes;
  if (dim >= 0) {
    if ((unknown >= 0 && known_sum > dim) || (unknown < 0 && known_sum != dim)) {
      ThrowValueError(c.op.name, ": determined shape must either match input shape along split_dim exactly if "
                      "fully specified, or be less than the size of the input along split_dim if not fully "
                      "specified. Got: ", known_sum, " for split_dim ", a, " of size ", dim);
    }
    if (unknown >= 0) resolved[unknown] = dim - known_sum;
  }
  std::vector<PartialShape> out;
  for (int64_t k = 0; k < num; ++k) {
    Dims d = in.dims;
    d[a] = resolved[k];
    out.push_back(PartialShape(d));
  }
  return out;
}

OpDef MakeSplitV() {
  OpDef op;
  op.name = "SplitV";
  op.inputs = {{"value", false, "T", kAllTypes},
               {"size_splits", false, "Tlen", kIndexTypes},
               {"axis", false, "", kIndexTypes}};
  op.outputs = {"output"};
  op.attrs = {{"num_split", AttrType::kInt, std::nullopt}};
  op.dtype_fn = SplitDTypes(0);
  op.shape_fn = SplitVShape;
  op.kernel = [](KernelContext& ctx) {
    const Tensor& in = ctx.input(0);
    int64_t axis = ReadInts(ctx.input(2))[0];
    if (axis < 0) axis += in.rank();
    std::vector<int64_t> pieces;
    for (const PartialShape& s : ctx.out_shapes) pieces.push_back(s.dims[axis]);
    SplitIntoOutputs(ctx, in, axis, pieces);
  };
  op.doc = "Splits `value` along `axis` into pieces of `size_splits` (one may be -1: the rest).";
  return op;
}

OpRegistrar unpack_op(WithNarrowTypes(MakeUnpack(), kNarrowTypes));
OpRegistrar split_op(WithNarrowTypes(MakeSplit(), kNarrowTypes));
OpRegistrar split_v_op(WithNarrowTypes(MakeSplitV(), kNarrowTypes));

}  // namespace
}  // namespace treadle
