// Run-time checks: Assert (fails with the given data when its condition is
// false) and CheckNumerics (fails when a float tensor holds a NaN or an
// infinity). Both are stateful, so a traced function always runs them.
#include <cmath>

#include "graph/print_format.h"
#include "ops/dispatch.h"
#include "ops/op_helpers.h"
#include "ops/registry.h"
#include "util/errors.h"

namespace treadle {
namespace {

void AssertKernel(KernelContext& ctx) {
  const Tensor& cond = ctx.input(0);
  if (cond.dtype() != DType::kBool || cond.num_elements() != 1) {
    ThrowInvalidArgument("Assert: condition must be a scalar bool tensor, got shape ", DimsToString(cond.shape()));
  }
  if (cond.data<bool>()[0]) return;
  const int64_t summarize = ctx.attrs.GetInt("summarize");
  std::string message = "assertion failed: ";
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (i > 1) message += " ";
    message += graph::FormatTensorForPrint(ctx.input(i), summarize);
  }
  ThrowInvalidArgument(message);
}

OpDef MakeAssert() {
  OpDef op;
  op.name = "Assert";
  op.inputs = {{"condition", false, "", kBoolType}, {"data", true, "", {}}};
  op.outputs = {};
  op.attrs = {{"summarize", AttrType::kInt, AttrValue(int64_t{3})}};
  op.dtype_fn = [](const InferContext&) { return std::vector<DType>{}; };
  op.shape_fn = [](const InferContext&) { return std::vector<PartialShape>{}; };
  op.kernel = AssertKernel;
  op.stateful = true;
  op.doc = "Raises InvalidArgumentError with `data` printed (`summarize` elements at each end) when `condition` "
           "is false.";
  return op;
}

void CheckNumericsKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  VisitFloat(x.dtype(), "CheckNumerics", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = x.data<T>();
    bool nan = false, inf = false;
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      nan |= std::isnan(p[i]);
      inf |= std::isinf(p[i]);
    }
    if (nan || inf) {
      ThrowInvalidArgument(ctx.attrs.GetString("message"), " : Tensor had ", nan && inf ? "NaN and Inf" : nan ? "NaN" : "Inf",
                           " values");
    }
  });
  ctx.set_output(0, x);
}

OpDef MakeCheckNumerics() {
  OpDef op;
  op.name = "CheckNumerics";
  op.inputs = {{"tensor", false, "T", kFloatTypes}};
  op.outputs = {"output"};
  op.attrs = {{"message", AttrType::kString, AttrValue(std::string(""))}};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = SameShapeAsInput(0);
  op.kernel = CheckNumericsKernel;
  op.stateful = true;
  op.doc = "`tensor` itself, after checking it holds no NaN or infinity (InvalidArgumentError naming `message`).";
  return op;
}

OpRegistrar assert_op(MakeAssert());
OpRegistrar check_numerics_op(MakeCheckNumerics());

}  // namespace
}  // namespace treadle
