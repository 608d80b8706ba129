// Elementwise float functions beyond elementwise.cc's: log1p, softplus and erf
// (TensorFlow's Log1p, Softplus, Erf), each accurate where the naive formula
// is not (log1p and softplus near 0 and for large |x|).
#include <cmath>

#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/elementwise.h"
#include "ops/op_helpers.h"
#include "ops/registry.h"

namespace treadle {
namespace {

template <typename F>
OpDef FloatUnaryOp(const char* name, const char* arg, const char* result, std::vector<std::string> api,
                   const char* doc, F f) {
  OpDef op;
  op.name = name;
  op.inputs = {{arg, false, "T", kFloatTypes}};
  op.outputs = {result};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = SameShapeAsInput(0);
  op.api_names = std::move(api);
  op.doc = doc;
  op.kernel = [name, f](KernelContext& ctx) {
    Tensor& out = ctx.allocate_output(0);
    VisitFloat(ctx.input(0).dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      UnaryMap<T, T>(ctx.input(0), out, [&](T x) { return static_cast<T>(f(x)); });
    });
  };
  return WithNarrowTypes(std::move(op), kHalfTypes);
}

// log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): no overflow for large x, and
// exact to rounding for very negative x.
template <typename T>
T Softplus(T x) {
  return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x)));
}

OpRegistrar log1p_op(FloatUnaryOp("Log1p", "x", "y", {"math.log1p"}, "log(1 + x), accurate for small x.",
                                  [](auto x) { return std::log1p(x); }));
OpRegistrar softplus_op(FloatUnaryOp("Softplus", "features", "activations", {"math.softplus", "nn.softplus"}, "log(exp(x) + 1), without overflow.",
                                     [](auto x) { return Softplus(x); }));
OpRegistrar erf_op(FloatUnaryOp("Erf", "x", "y", {"math.erf"}, "The Gauss error function.", [](auto x) { return std::erf(x); }));

}  // namespace
}  // namespace treadle
