// Ops that change only a tensor's shape, or report it: Reshape, ExpandDims,
// Squeeze, Identity (all alias the input's buffer: no element is copied),
// Shape, Size and Rank.
#include <limits>

#include "ops/shape_values.h"
#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"

namespace treadle {
namespace {

// The output of a shape-only op is the input's buffer under the inferred shape.
void AliasWithInferredShape(KernelContext& ctx) {
  ctx.set_output(0, ctx.input(0).Reshaped(ctx.out_shapes[0].dims));
}

// ---- Reshape ----------------------------------------------------------------

// Checks the requested sizes (at most one -1, no other negative) and returns
// the index of the -1, or -1 when there is none.
int CheckRequestedShape(const OpDef& op, const std::vector<int64_t>& sizes) {
  int unknown = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      if (unknown >= 0) {
        ThrowValueError(op.name, ": only one input size may be -1, not both ", unknown, " and ", i);
      }
      unknown = static_cast<int>(i);
    } else if (sizes[i] < 0) {
      ThrowValueError(op.name, ": size ", i, " must be non-negative, not ", sizes[i]);
    }
  }
  return unknown;
}

// Reshape to a shape computed in the graph: its known elements (ops/
// shape_values.h); one unknown element is worked out from the input's size
// when that is known, as TensorFlow's shape function does.
PartialShape ReshapeToComputedShape(const InferContext& c, const PartialShape& in) {
  PartialShape out = ShapeOperand(c, 1);
  if (!out.known_rank) return out;
  CheckOutputRank(c.op, out.rank());
  int unknown = -1, unknowns = 0;
  int64_t known_product = 1;
  for (int i = 0; i < out.rank(); ++i) {
    if (out.dims[i] == kUnknownDim) {
      unknown = i;
      ++unknowns;
    } else if (out.dims[i] > 0 && known_product > std::numeric_limits<int64_t>::max() / out.dims[i]) {
      return out;  // the op's kernel reports sizes that overflow
    } else {
      known_product *= out.dims[i];
    }
  }
  if (!in.fully_defined() || unknowns > 1) return out;
  const int64_t n = NumElements(in.dims);
  if (unknowns == 0 && known_product != n) {
    ThrowValueError("Input to reshape is a tensor with ", n, " values, but the requested shape has ", known_product,
                    " (", c.op.name, " of ", in.ToString(), " to ", out.ToString(), ")");
  }
  if (unknowns == 1 && known_product > 0) {
    if (n % known_product != 0) {
      ThrowValueError("Input to reshape is a tensor with ", n, " values, but the requested shape requires a "
                      "multiple of ", known_product, " (", c.op.name, " of ", in.ToString(), " to ", out.ToString(),
                      ")");
    }
    out.dims[unknown] = n / known_product;
  }
  return out;
}

PartialShape ReshapeShape(const InferContext& c) {
  const PartialShape& in = c.shapes[0];
  const PartialShape& shape_arg = c.shapes[1];
  if (shape_arg.known_rank && shape_arg.rank() != 1) {
    ThrowValueError(c.op.name, ": 'shape' must be a vector, got shape ", shape_arg.ToString());
  }
  auto requested = c.IntValues(1);
  if (!requested) return ReshapeToComputedShape(c, in);
  CheckOutputRank(c.op, static_cast<int64_t>(requested->size()));
  Dims dims(requested->begin(), requested->end());
  const int unknown = CheckRequestedShape(c.op, dims);
  const int64_t known_product = CheckedProduct(c.op, dims);
  if (!in.fully_defined()) return PartialShape(dims);  // the -1 (if any) stays unknown
  const int64_t n = NumElements(in.dims);
  if (unknown < 0) {
    if (known_product != n) {
      ThrowValueError("Input to reshape is a tensor with ", n, " values, but the requested shape has ",
                      known_product, " (", c.op.name, " of ", in.ToString(), " to ", DimsToString(dims), ")");
    }
    return PartialShape(dims);
  }
  if (known_product == 0) {
    ThrowValueError(c.op.name, ": cannot infer the missing input size for an empty tensor unless all specified "
                    "input sizes are non-zero (shape ", DimsToString(dims), ")");
  }
  if (n % known_product != 0) {
    ThrowValueError("Input to reshape is a tensor with ", n, " values, but the requested shape requires a multiple of ",
                    known_product, " (", c.op.name, " of ", in.ToString(), " to ", DimsToString(dims), ")");
  }
  dims[unknown] = n / known_product;
  return PartialShape(dims);
}

OpDef MakeReshape() {
  OpDef op;
  op.name = "Reshape";
  op.inputs = {{"tensor", false, "T", kAllTypes}, {"shape", false, "Tshape", kIndexTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{ReshapeShape(c)}; };
  op.kernel = AliasWithInferredShape;
  op.doc = "The elements of `tensor` (shared, not copied) under shape `shape`; one size may be -1.";
  return op;
}

// ---- ExpandDims -------------------------------------------------------------

PartialShape ExpandDimsShape(const InferContext& c) {
  const PartialShape& in = c.shapes[0];
  auto axis = ScalarIntInput(c, 1, "axis");
  if (!in.known_rank) return PartialShape::Unknown();
  const int64_t rank = in.rank();
  CheckOutputRank(c.op, rank + 1);
  if (!axis) return PartialShape::UnknownOfRank(static_cast<int>(rank + 1));
  if (*axis < -rank - 1 || *axis > rank) {
    ThrowValueError(c.op.name, ": tried to expand dim index ", *axis, " for tensor with ", rank,
                    " dimensions (axis must be in [", -rank - 1, ", ", rank, "])");
  }
  const int64_t a = *axis < 0 ? *axis + rank + 1 : *axis;
  Dims dims = in.dims;
  dims.insert(dims.begin() + a, 1);
  return PartialShape(dims);
}

OpDef MakeExpandDims() {
  OpDef op;
  op.name = "ExpandDims";
  // TensorFlow's OpDef calls the second input `dim`; its Python API (raw_ops too) says `axis`.
  op.inputs = {{"input", false, "T", kAllTypes}, {"axis", false, "Tdim", kIndexTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{ExpandDimsShape(c)}; };
  op.kernel = AliasWithInferredShape;
  op.doc = "`input` with a dimension of size 1 inserted at `axis` (shares the buffer).";
  return op;
}

// ---- Squeeze ----------------------------------------------------------------

PartialShape SqueezeShape(const InferContext& c) {
  const PartialShape& in = c.shapes[0];
  const std::vector<int64_t>& axes = c.attrs.GetIntList("axis");
  if (!in.known_rank) return PartialShape::Unknown();
  const int64_t rank = in.rank();
  std::vector<bool> drop(rank, false);
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) {
      if (in.dims[i] < 0) return PartialShape::Unknown();  // might or might not be 1
      drop[i] = in.dims[i] == 1;
    }
  }
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      ThrowValueError(c.op.name, ": tried to squeeze dim index ", axis, " for tensor with ", rank,
                      " dimensions (axis must be in [", -rank, ", ", rank, "))");
    }
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (in.dims[a] >= 0 && in.dims[a] != 1) {
      ThrowValueError(c.op.name, ": can not squeeze dim[", a, "], expected a dimension of 1, got ", in.dims[a]);
    }
    drop[a] = true;  // an unknown dimension named here must be 1
  }
  Dims dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (!drop[i]) dims.push_back(in.dims[i]);
  }
  return PartialShape(dims);
}

OpDef MakeSqueeze() {
  OpDef op;
  op.name = "Squeeze";
  op.inputs = {{"input", false, "T", kAllTypes}};
  op.outputs = {"output"};
  // TensorFlow's OpDef calls this attr `squeeze_dims`; its Python API (raw_ops too) says `axis`.
  op.attrs = {{"axis", AttrType::kIntList, AttrValue(std::vector<int64_t>{})}};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{SqueezeShape(c)}; };
  op.kernel = AliasWithInferredShape;
  op.doc = "`input` without the size-1 dimensions listed in `axis` (all of them when empty); shares the buffer.";
  return op;
}

// ---- Identity ---------------------------------------------------------------

OpDef MakeIdentity() {
  OpDef op;
  op.name = "Identity";
  op.inputs = {{"input", false, "T", kAllTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = SameShapeAsInput(0);
  op.kernel = [](KernelContext& ctx) { ctx.set_output(0, ctx.input(0)); };
  op.doc = "Returns `input` itself (the same buffer).";
  return op;
}

// ---- Shape, Size, Rank ------------------------------------------------------

DType CheckIndexOutType(const InferContext& c) {
  DType t = c.attrs.GetType("out_type");
  if (t != DType::kInt32 && t != DType::kInt64) {
    ThrowTypeError(c.op.name, ": out_type must be int32 or int64, got ", DTypeName(t));
  }
  return t;
}

// Writes `values` into a new int32/int64 output, failing when int32 is too narrow.
void WriteIndexValues(KernelContext& ctx, const std::vector<int64_t>& values, Dims shape) {
  Tensor& out = ctx.allocate_output(0, std::move(shape));
  if (out.dtype() == DType::kInt64) {
    std::copy(values.begin(), values.end(), out.data<int64_t>());
    return;
  }
  int32_t* dst = out.data<int32_t>();
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] > std::numeric_limits<int32_t>::max()) {
      ThrowInvalidArgument(ctx.op.name, ": value ", values[i], " does not fit out_type int32; use int64");
    }
    dst[i] = static_cast<int32_t>(values[i]);
  }
}

OpDef MakeShape() {
  OpDef op;
  op.name = "Shape";
  op.inputs = {{"input", false, "T", kAllTypes}};
  op.outputs = {"output"};
  op.attrs = {{"out_type", AttrType::kType, AttrValue(DType::kInt32)}};
  op.dtype_fn = [](const InferContext& c) { return std::vector<DType>{CheckIndexOutType(c)}; };
  op.shape_fn = [](const InferContext& c) {
    const PartialShape& in = c.shapes[0];
    return std::vector<PartialShape>{PartialShape(Dims{in.known_rank ? in.rank() : kUnknownDim})};
  };
  op.kernel = [](KernelContext& ctx) {
    const Dims& dims = ctx.input(0).shape();
    WriteIndexValues(ctx, dims, {static_cast<int64_t>(dims.size())});
  };
  op.doc = "The shape of `input` as a vector.";
  return op;
}

OpDef MakeSize() {
  OpDef op;
  op.name = "Size";
  op.inputs = {{"input", false, "T", kAllTypes}};
  op.outputs = {"output"};
  op.attrs = {{"out_type", AttrType::kType, AttrValue(DType::kInt32)}};
  op.dtype_fn = [](const InferContext& c) { return std::vector<DType>{CheckIndexOutType(c)}; };
  op.shape_fn = ScalarShape();
  op.kernel = [](KernelContext& ctx) { WriteIndexValues(ctx, {ctx.input(0).num_elements()}, {}); };
  op.doc = "The number of elements of `input`.";
  return op;
}

OpDef MakeRank() {
  OpDef op;
  op.name = "Rank";
  op.inputs = {{"input", false, "T", kAllTypes}};
  op.outputs = {"output"};
  op.dtype_fn = FixedDType(DType::kInt32);
  op.shape_fn = ScalarShape();
  op.kernel = [](KernelContext& ctx) { *ctx.allocate_output(0).data<int32_t>() = ctx.input(0).rank(); };
  op.doc = "The number of dimensions of `input`.";
  return op;
}

OpRegistrar reshape_op(WithNarrowTypes(MakeReshape(), kNarrowTypes));
OpRegistrar expand_dims_op(WithNarrowTypes(MakeExpandDims(), kNarrowTypes));
OpRegistrar squeeze_op(WithNarrowTypes(MakeSqueeze(), kNarrowTypes));
OpRegistrar identity_op(WithNarrowTypes(MakeIdentity(), kNarrowTypes));
OpRegistrar shape_op(WithNarrowTypes(MakeShape(), kNarrowTypes));
OpRegistrar size_op(WithNarrowTypes(MakeSize(), kNarrowTypes));
OpRegistrar rank_op(WithNarrowTypes(MakeRank(), kNarrowTypes));

}  // namespace
}  // namespace treadle
