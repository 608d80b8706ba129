// Ops the gradient rules (treadle/autodiff) are built from: reduction indices
// of a broadcast (BroadcastGradientArgs), the scatter-add behind gather
// gradients (UnsortedSegmentSum, in segment_ops.cc), BroadcastTo, the fused ReLU gradient and
// InvertPermutation (the gradient of a transpose). Each is an ordinary op,
// usable eagerly and in graphs, under TensorFlow's name.
#include <type_traits>

#include "ops/shape_values.h"
#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/simd/vec_kernels.h"
#include "ops/kernels/array_util.h"

namespace treadle {
namespace {

// A known vector-valued input as a shape: every entry must be >= 0.
Dims ShapeValues(const OpDef& op, const std::vector<int64_t>& v, const char* what) {
  for (int64_t d : v) {
    if (d < 0) ThrowInvalidArgument(op.name, ": '", what, "' has a negative dimension ", d);
  }
  return Dims(v.begin(), v.end());
}

// ---------------------------------------------------------------- BroadcastGradientArgs

// The axes (of the broadcast result) a gradient must be summed over to get
// back to shape `x`, when `x` and `y` were broadcast together.
std::vector<int64_t> ReductionAxes(const Dims& x, const Dims& y) {
  const size_t rank = std::max(x.size(), y.size());
  std::vector<int64_t> axes;
  for (size_t i = 0; i < rank; ++i) {
    const bool x_missing = i < rank - x.size();
    const int64_t dx = x_missing ? 1 : x[i - (rank - x.size())];
    const int64_t dy = i < rank - y.size() ? 1 : y[i - (rank - y.size())];
    if (x_missing || (dx == 1 && dy != 1)) axes.push_back(static_cast<int64_t>(i));
  }
  return axes;
}

Tensor IndexVector(DType dtype, const std::vector<int64_t>& v) {
  Tensor t(dtype, {static_cast<int64_t>(v.size())});
  VisitInt(dtype, "BroadcastGradientArgs", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = static_cast<T>(v[i]);
  });
  return t;
}

OpDef MakeBroadcastGradientArgs() {
  OpDef op;
  op.name = "BroadcastGradientArgs";
  op.inputs = {{"s0", false, "T", kIndexTypes}, {"s1", false, "T", kIndexTypes}};
  op.outputs = {"r0", "r1"};
  op.dtype_fn = [](const InferContext& c) { return std::vector<DType>{c.dtypes[0], c.dtypes[0]}; };
  op.shape_fn = [](const InferContext& c) {
    CheckInputRank(c, 0, 1, "s0");
    CheckInputRank(c, 1, 1, "s1");
    return std::vector<PartialShape>{PartialShape::UnknownOfRank(1), PartialShape::UnknownOfRank(1)};
  };
  op.kernel = [](KernelContext& ctx) {
    const Dims x = ShapeValues(ctx.op, ReadInts(ctx.input(0)), "s0");
    const Dims y = ShapeValues(ctx.op, ReadInts(ctx.input(1)), "s1");
    try {
      BroadcastDims(x, y);
    } catch (const StaticError& e) {
      ThrowInvalidArgument("BroadcastGradientArgs: ", e.what());
    }
    ctx.set_output(0, IndexVector(ctx.input(0).dtype(), ReductionAxes(x, y)));
    ctx.set_output(1, IndexVector(ctx.input(0).dtype(), ReductionAxes(y, x)));
  };
  op.doc = "For shapes s0 and s1 broadcast together: the axes of the result to sum a gradient over to get back "
           "to s0 (r0) and to s1 (r1).";
  return op;
}

OpRegistrar broadcast_gradient_args_op(MakeBroadcastGradientArgs());

// ---------------------------------------------------------------- BroadcastTo

// Checks that `in` broadcasts to `target` (both possibly partial).
void CheckBroadcastable(const OpDef& op, const PartialShape& in, const PartialShape& target) {
  if (!in.known_rank || !target.known_rank) return;
  if (in.rank() > target.rank()) {
    ThrowValueError(op.name, ": cannot broadcast a tensor of shape ", in.ToString(), " to shape ",
                    target.ToString(), " of lower rank");
  }
  const int off = target.rank() - in.rank();
  for (int d = 0; d < in.rank(); ++d) {
    const int64_t a = in.dims[d], b = target.dims[d + off];
    if (a >= 0 && b >= 0 && a != 1 && a != b) {
      ThrowValueError(op.name, ": cannot broadcast a tensor of shape ", in.ToString(), " to shape ",
                      target.ToString());
    }
  }
}

OpDef MakeBroadcastTo() {
  OpDef op;
  op.name = "BroadcastTo";
  op.inputs = {{"input", false, "T", kAllTypes}, {"shape", false, "Tidx", kIndexTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) {
    CheckInputRank(c, 1, 1, "shape");
    auto v = c.IntValues(1);
    if (!v) return std::vector<PartialShape>{ShapeOperand(c, 1)};  // a computed shape: what is known of it
    CheckOutputRank(c.op, static_cast<int64_t>(v->size()));
    for (int64_t d : *v) {
      if (d < 0) ThrowValueError(c.op.name, ": shape has a negative dimension ", d);
    }
    PartialShape target{Dims(v->begin(), v->end())};
    CheckedProduct(c.op, target.dims);
    CheckBroadcastable(c.op, c.shapes[0], target);
    return std::vector<PartialShape>{target};
  };
  op.kernel = [](KernelContext& ctx) {
    const Tensor& in = ctx.input(0);
    Tensor& out = ctx.allocate_output(0);
    if (out.num_elements() == 0) return;
    const Dims& od = out.shape();
    const int off = out.rank() - in.rank();
    const Dims in_strides = RowMajorStrides(in.shape());
    Dims strides(od.size(), 0);
    for (int d = 0; d < in.rank(); ++d) {
      if (in.dim(d) != 1) strides[d + off] = in_strides[d];
    }
    StridedCopy(in.dtype(), static_cast<const char*>(in.raw_data()), od, strides,
                static_cast<char*>(out.raw_data()));
  };
  op.api_names = {"broadcast_to"};
  op.doc = "`input` broadcast (NumPy rules) to `shape`.";
  return op;
}

OpRegistrar broadcast_to_op(WithNarrowTypes(MakeBroadcastTo(), kNarrowTypes));

// ---------------------------------------------------------------- ReluGrad, SigmoidGrad, TanhGrad

// Two inputs of one shape (as far as it is known): that shape.
ShapeFn SameShapeOfTwoInputs(const char* first, const char* second) {
  return [first, second](const InferContext& c) {
    const PartialShape& a = c.shapes[0];
    const PartialShape& b = c.shapes[1];
    if (!a.known_rank) return std::vector<PartialShape>{b};
    if (!b.known_rank) return std::vector<PartialShape>{a};
    bool ok = a.rank() == b.rank();
    Dims out = a.dims;
    for (int d = 0; ok && d < a.rank(); ++d) {
      if (a.dims[d] >= 0 && b.dims[d] >= 0 && a.dims[d] != b.dims[d]) ok = false;
      if (out[d] < 0) out[d] = b.dims[d];
    }
    if (!ok) {
      ThrowValueError(c.op.name, ": ", first, " and ", second, " must have the same shape, got ", a.ToString(),
                      " and ", b.ToString());
    }
    return std::vector<PartialShape>{PartialShape(out)};
  };
}

OpDef MakeReluGrad() {
  OpDef op;
  op.name = "ReluGrad";
  op.inputs = {{"gradients", false, "T", kNumericTypes}, {"features", false, "T", kNumericTypes}};
  op.outputs = {"backprops"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = SameShapeOfTwoInputs("gradients", "features");
  op.kernel = [](KernelContext& ctx) {
    const Tensor& g = ctx.input(0);
    const Tensor& f = ctx.input(1);
    Tensor& out = ctx.allocate_output(0);
    VisitNumeric(g.dtype(), "ReluGrad", [&](auto tag) {
      using T = typename decltype(tag)::type;
      // The output is a fresh buffer (restrict lets the loop vectorize), and
      // the select must not become a branch: features' signs are random.
      const T* __restrict pg = g.data<T>();
      const T* __restrict pf = f.data<T>();
      T* __restrict po = out.data<T>();
      const int64_t n = out.num_elements();
      for (int64_t i = 0; i < n; ++i) {
        const T grad = pg[i], feature = pf[i];  // both loaded unconditionally: a select, not a branch
        po[i] = feature > T(0) ? grad : T(0);
      }
    });
  };
  op.doc = "The gradient of Relu: gradients * (features > 0).";
  return WithNarrowTypes(std::move(op), kNarrowTypes);
}

// The gradient of an activation from its output y and the output's gradient
// dy, in one pass (instead of three ops with a temporary each): f(y, dy) for
// float64, the SIMD kernel `vec` (the same arithmetic) for float32.
template <typename F>
OpDef ActivationGrad(const char* name, const char* doc, simd::Binary vec, F f) {
  OpDef op;
  op.name = name;
  op.inputs = {{"y", false, "T", kFloatTypes}, {"dy", false, "T", kFloatTypes}};
  op.outputs = {"z"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = SameShapeOfTwoInputs("y", "dy");
  op.kernel = [name, vec, f](KernelContext& ctx) {
    const Tensor& y = ctx.input(0);
    const Tensor& dy = ctx.input(1);
    Tensor& out = ctx.allocate_output(0);
    if (y.dtype() == DType::kFloat32) {
      return simd::BinaryF32(vec, y.data<float>(), 1, dy.data<float>(), 1, out.data<float>(), out.num_elements());
    }
    VisitFloat(y.dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* __restrict py = y.data<T>();
      const T* __restrict pd = dy.data<T>();
      T* __restrict po = out.data<T>();
      const int64_t n = out.num_elements();
      for (int64_t i = 0; i < n; ++i) po[i] = f(py[i], pd[i]);
    });
  };
  op.doc = doc;
  return WithNarrowTypes(std::move(op), kHalfTypes);
}

OpRegistrar sigmoid_grad_op(ActivationGrad("SigmoidGrad", "The gradient of Sigmoid from its output: dy * y * (1 - y).",
                                           simd::Binary::kSigmoidGrad,
                                           [](auto y, auto dy) { return dy * (y * (decltype(y)(1) - y)); }));
OpRegistrar tanh_grad_op(ActivationGrad("TanhGrad", "The gradient of Tanh from its output: dy * (1 - y * y).",
                                        simd::Binary::kTanhGrad,
                                        [](auto y, auto dy) { return dy * (decltype(y)(1) - y * y); }));
OpRegistrar relu_grad_op(MakeReluGrad());

// ---------------------------------------------------------------- InvertPermutation

OpDef MakeInvertPermutation() {
  OpDef op;
  op.name = "InvertPermutation";
  op.inputs = {{"x", false, "T", kIndexTypes}};
  op.outputs = {"y"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) {
    CheckInputRank(c, 0, 1, "x");
    return std::vector<PartialShape>{c.shapes[0].known_rank ? c.shapes[0] : PartialShape::UnknownOfRank(1)};
  };
  op.kernel = [](KernelContext& ctx) {
    const std::vector<int64_t> perm = ReadInts(ctx.input(0));
    const int64_t n = static_cast<int64_t>(perm.size());
    std::vector<int64_t> inverse(perm.size(), -1);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = perm[i];
      if (p < 0 || p >= n) ThrowInvalidArgument("InvertPermutation: x[", i, "] = ", p, " is not in [0, ", n, ")");
      if (inverse[p] >= 0) ThrowInvalidArgument("InvertPermutation: ", p, " is duplicated in the input");
      inverse[p] = i;
    }
    Tensor& out = ctx.allocate_output(0);
    VisitInt(out.dtype(), "InvertPermutation", [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < n; ++i) out.data<T>()[i] = static_cast<T>(inverse[i]);
    });
  };
  op.api_names = {"math.invert_permutation", "invert_permutation"};
  op.doc = "y such that y[x[i]] = i, for a permutation x of 0..n-1.";
  return op;
}

OpRegistrar invert_permutation_op(MakeInvertPermutation());

}  // namespace
}  // namespace treadle
