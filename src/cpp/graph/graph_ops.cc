// The structural ops of a graph: Placeholder (an input the caller feeds),
// Const (a value stored in the graph) and NoOp (an anchor for control
// dependencies). The executor folds Const into its constant table and feeds
// Placeholders itself; the kernels below serve eager calls.
#include "ops/registry.h"
#include "util/errors.h"

namespace treadle {
namespace {

OpDef PlaceholderOp() {
  OpDef op;
  op.name = "Placeholder";
  op.outputs = {"output"};
  op.attrs = {{"dtype", AttrType::kType, std::nullopt},
              {"shape", AttrType::kShape, AttrValue(PartialShape::Unknown())}};
  op.dtype_fn = [](const InferContext& c) { return std::vector<DType>{c.attrs.GetType("dtype")}; };
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{c.attrs.GetShape("shape")}; };
  op.kernel = [](KernelContext& ctx) {
    ThrowInvalidArgument("a Placeholder of dtype ", DTypeName(ctx.attrs.GetType("dtype")), " and shape ",
                         ctx.attrs.GetShape("shape").ToString(), " must be fed a value");
  };
  op.doc = "A graph input: the value the caller feeds when the graph runs.";
  return op;
}

OpDef ConstOp() {
  OpDef op;
  op.name = "Const";
  op.outputs = {"output"};
  op.attrs = {{"value", AttrType::kTensor, std::nullopt}, {"dtype", AttrType::kType, std::nullopt}};
  op.dtype_fn = [](const InferContext& c) {
    DType declared = c.attrs.GetType("dtype");
    DType actual = c.attrs.GetTensor("value").dtype();
    if (declared != actual) {
      ThrowTypeError("Const: attr 'dtype' is ", DTypeName(declared), " but the value is ", DTypeName(actual));
    }
    return std::vector<DType>{declared};
  };
  op.shape_fn = [](const InferContext& c) {
    return std::vector<PartialShape>{PartialShape(c.attrs.GetTensor("value").shape())};
  };
  op.kernel = [](KernelContext& ctx) { ctx.set_output(0, ctx.attrs.GetTensor("value")); };
  op.doc = "A constant value stored in the graph.";
  return op;
}

OpDef NoOpOp() {
  OpDef op;
  op.name = "NoOp";
  op.dtype_fn = [](const InferContext&) { return std::vector<DType>{}; };
  op.shape_fn = [](const InferContext&) { return std::vector<PartialShape>{}; };
  op.kernel = [](KernelContext&) {};
  op.doc = "Does nothing; other nodes use it as a control dependency anchor.";
  return op;
}

OpRegistrar placeholder_op(PlaceholderOp());
OpRegistrar const_op(ConstOp());
OpRegistrar no_op(NoOpOp());

}  // namespace
}  // namespace treadle
