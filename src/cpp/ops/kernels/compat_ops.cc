// Ops TensorFlow graphs show that pass values through or reuse another op's
// computation: Add (TensorFlow's op for string concatenation, `a + b` on
// strings), StopGradient (an identity that gradients do not pass through),
// EnsureShape (an identity that checks its input's shape) and IdentityN.
#include "ops/narrow_types.h"
#include "ops/op_helpers.h"
#include "ops/registry.h"
#include "util/errors.h"

namespace treadle {
namespace {

// The dtypes of TensorFlow's Add: numbers and strings.
const std::vector<DType> kAddTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                                      DType::kString};

OpDef MakeAdd() {
  OpDef op;
  op.name = "Add";
  op.inputs = {{"x", false, "T", kAddTypes}, {"y", false, "T", kAddTypes}};
  op.outputs = {"z"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = BroadcastShapeOfInputs();
  // The same computation as AddV2, whose kernel it runs (looked up at run
  // time: registrars in other files may not have run when this one does).
  op.kernel = [](KernelContext& ctx) { OpRegistry::Global().Get("AddV2").kernel(ctx); };
  op.doc = "x + y with broadcasting, strings concatenated: TensorFlow's Add, which its graphs use for strings "
           "(AddV2 for numbers).";
  return op;
}

OpDef MakeStopGradient() {
  OpDef op;
  op.name = "StopGradient";
  op.inputs = {{"input", false, "T", kAllTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = SameShapeAsInput(0);
  op.kernel = [](KernelContext& ctx) { ctx.set_output(0, ctx.input(0)); };
  op.api_names = {"stop_gradient"};
  op.doc = "Returns `input` itself (the same buffer); gradients do not flow through it.";
  return op;
}

// The attr shape merged with the input's (known dims of either), or a ValueError
// when they conflict.
PartialShape MergeShapes(const OpDef& op, const PartialShape& in, const PartialShape& want) {
  if (!want.known_rank) return in;
  if (!in.known_rank) return want;
  if (in.rank() != want.rank()) {
    ThrowInvalidArgument(op.name, ": Shape of tensor ", in.ToString(), " is not compatible with expected shape ",
                         want.ToString());
  }
  Dims out(in.dims);
  for (int i = 0; i < in.rank(); ++i) {
    if (want.dims[i] == kUnknownDim) continue;
    if (out[i] != kUnknownDim && out[i] != want.dims[i]) {
      ThrowInvalidArgument(op.name, ": Shape of tensor ", in.ToString(), " is not compatible with expected shape ",
                           want.ToString());
    }
    out[i] = want.dims[i];
  }
  return PartialShape(out);
}

OpDef MakeEnsureShape() {
  OpDef op;
  op.name = "EnsureShape";
  op.inputs = {{"input", false, "T", kAllTypes}};
  op.outputs = {"output"};
  op.attrs = {{"shape", AttrType::kShape, std::nullopt}};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) {
    return std::vector<PartialShape>{MergeShapes(c.op, c.shapes[0], c.attrs.GetShape("shape"))};
  };
  op.kernel = [](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const PartialShape& want = ctx.attrs.GetShape("shape");
    if (!want.IsCompatibleWith(x.shape())) {
      ThrowInvalidArgument("EnsureShape: Shape of tensor ", DimsToString(x.shape()),
                           " is not compatible with expected shape ", want.ToString());
    }
    ctx.set_output(0, x);
  };
  op.doc = "`input` itself, after checking that its shape is compatible with `shape`.";
  return op;
}

OpDef MakeIdentityN() {
  OpDef op;
  op.name = "IdentityN";
  op.inputs = {{"input", true, "", {}}};
  op.outputs = {"output"};
  op.dtype_fn = [](const InferContext& c) { return c.dtypes; };
  op.shape_fn = [](const InferContext& c) { return c.shapes; };
  op.kernel = [](KernelContext& ctx) {
    for (int i = 0; i < ctx.num_inputs(); ++i) ctx.set_output(i, ctx.input(i));
  };
  op.doc = "Returns its inputs themselves (the same buffers), of any dtypes; td.custom_gradient gives it a "
           "gradient of its own.";
  return op;
}

OpRegistrar add_op(MakeAdd());
OpRegistrar identity_n_op(MakeIdentityN());
OpRegistrar ensure_shape_op(WithNarrowTypes(MakeEnsureShape(), kNarrowTypes));
OpRegistrar stop_gradient_op(WithNarrowTypes(MakeStopGradient(), kNarrowTypes));

}  // namespace
}  // namespace treadle
