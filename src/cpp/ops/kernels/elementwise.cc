// Elementwise ops: unary math, binary arithmetic with broadcasting,
// comparisons and logical ops.
#include "ops/kernels/elementwise.h"

#include <cmath>
#include <optional>
#include <string>
#include <type_traits>

#include "ops/dispatch.h"
#include "ops/narrow_types.h"
#include "ops/kernels/simd/vec_kernels.h"

namespace treadle {
namespace {


const std::vector<DType> kAddTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                                      DType::kString};

// Registers a binary op whose two inputs share type attr T and whose output has
// the broadcast shape. `visit` picks the dtype family, `f` is a generic
// callable (x, y) -> result. With `vec`, float32 and float64 run that SIMD
// kernel instead (which must compute the same as `f`).
template <bool kBoolOut, typename Visit, typename F>
OpDef BinaryOp(const char* name, std::vector<DType> allowed, std::vector<std::string> api, Visit visit, F f,
               std::optional<simd::Binary> vec = std::nullopt) {
  OpDef op;
  op.name = name;
  op.inputs = {{"x", false, "T", allowed}, {"y", false, "T", allowed}};
  op.outputs = {"z"};
  op.dtype_fn = kBoolOut ? FixedDType(DType::kBool) : SameDTypeAsInput(0);
  op.shape_fn = BroadcastShapeOfInputs();
  op.api_names = std::move(api);
  op.kernel = [name, visit, f, vec](KernelContext& ctx) {
    Tensor& out = ctx.allocate_output(0);
    const DType dtype = ctx.input(0).dtype();
    if (vec && dtype == DType::kFloat32) return SimdBroadcastBinary<float>(ctx.input(0), ctx.input(1), out, *vec);
    if (vec && dtype == DType::kFloat64) return SimdBroadcastBinary<double>(ctx.input(0), ctx.input(1), out, *vec);
    visit(dtype, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Out = std::conditional_t<kBoolOut, bool, T>;
      BroadcastBinary<T, Out>(ctx.input(0), ctx.input(1), out,
                              [&](const T& x, const T& y) { return static_cast<Out>(f(x, y)); });
    });
  };
  return WithNarrowTypes(std::move(op), kNarrowTypes);
}

template <typename Visit, typename F>
OpDef UnaryOp(const char* name, const char* arg, std::vector<DType> allowed, std::vector<std::string> api,
              Visit visit, F f, bool bool_output = false) {
  OpDef op;
  op.name = name;
  op.inputs = {{arg, false, "T", allowed}};
  op.outputs = {"y"};
  op.dtype_fn = bool_output ? FixedDType(DType::kBool) : SameDTypeAsInput(0);
  op.shape_fn = SameShapeAsInput(0);
  op.api_names = std::move(api);
  op.kernel = [name, visit, f](KernelContext& ctx) {
    Tensor& out = ctx.allocate_output(0);
    visit(ctx.input(0).dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      UnaryMap<T, T>(ctx.input(0), out, [&](T x) { return static_cast<T>(f(x)); });
    });
  };
  return WithNarrowTypes(std::move(op), kNarrowTypes);
}

// A float op whose float32 and float64 kernels are SIMD array functions
// (simd/vec_kernels.h).
OpDef SimdFloatUnaryOp(const char* name, std::vector<std::string> api, simd::Unary vec) {
  OpDef op;
  op.name = name;
  op.inputs = {{"x", false, "T", kFloatTypes}};
  op.outputs = {"y"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = SameShapeAsInput(0);
  op.api_names = std::move(api);
  op.kernel = [name, vec](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& out = ctx.allocate_output(0);
    if (x.dtype() == DType::kFloat32) return simd::UnaryF32(vec, x.data<float>(), out.data<float>(), x.num_elements());
    if (x.dtype() == DType::kFloat64) {
      return simd::UnaryF64(vec, x.data<double>(), out.data<double>(), x.num_elements());
    }
    ThrowUnsupported(name, x.dtype());
  };
  return WithNarrowTypes(std::move(op), kHalfTypes);
}

auto visit_numeric = [](DType t, const char* w, auto&& fn) { VisitNumeric(t, w, fn); };
auto visit_float = [](DType t, const char* w, auto&& fn) { VisitFloat(t, w, fn); };
auto visit_int = [](DType t, const char* w, auto&& fn) { VisitInt(t, w, fn); };
auto visit_all = [](DType t, const char* w, auto&& fn) { VisitAll(t, w, fn); };
auto visit_bool = [](DType t, const char* w, auto&& fn) {
  if (t != DType::kBool) ThrowUnsupported(w, t);
  fn(Tag<bool>{});
};

// Signed integer overflow is undefined in C++; TensorFlow's integer ops wrap
// around, so the arithmetic that can overflow goes through unsigned types.
template <typename T> constexpr bool kWraps = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T> T WrapAdd(T x, T y) {
  if constexpr (kWraps<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
  } else {
    return x + y;
  }
}
template <typename T> T WrapSub(T x, T y) {
  if constexpr (kWraps<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(x) - static_cast<U>(y));
  } else {
    return x - y;
  }
}
template <typename T> T WrapMul(T x, T y) {
  if constexpr (kWraps<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(x) * static_cast<U>(y));
  } else {
    return x * y;
  }
}

template <typename T> T WrapNeg(T x) {
  if constexpr (kWraps<T>) {
    return WrapSub(T(0), x);
  } else {
    return -x;  // keeps -0.0 distinct from 0.0
  }
}

template <typename T> T FloorDivide(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    if (y == 0) ThrowInvalidArgument("Integer division by zero");
    // lowest / -1 overflows (and traps on x86); the wrapped result is lowest.
    if (y == -1) return WrapNeg(x);
    T q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
    return q;
  } else {
    return std::floor(x / y);
  }
}

template <typename T> T FloorModulo(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    if (y == 0) ThrowInvalidArgument("Integer division by zero");
    if (y == -1) return 0;  // lowest % -1 traps on x86
    T r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
  } else {
    T r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
  }
}

template <typename T> T Power(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    if (y < 0) ThrowInvalidArgument("Integers to negative integer powers are not allowed");
    T result = 1;
    while (y) {
      if (y & 1) result = WrapMul(result, x);
      x = WrapMul(x, x);
      y >>= 1;
    }
    return result;
  } else {
    return std::pow(x, y);
  }
}

// Arithmetic --------------------------------------------------------------
OpRegistrar add_op(BinaryOp<false>("AddV2", kAddTypes, {"add", "math.add"}, visit_all,
                            [](const auto& x, const auto& y) {
                              if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::string>) {
                                return x + y;
                              } else {
                                return WrapAdd(x, y);
                              }
                            }, simd::Binary::kAdd));
OpRegistrar sub_op(BinaryOp<false>("Sub", kNumericTypes, {"subtract", "math.subtract"}, visit_numeric,
                            [](auto x, auto y) { return WrapSub(x, y); }, simd::Binary::kSub));
OpRegistrar mul_op(BinaryOp<false>("Mul", kNumericTypes, {"multiply", "math.multiply"}, visit_numeric,
                            [](auto x, auto y) { return WrapMul(x, y); }, simd::Binary::kMul));
OpRegistrar realdiv_op(BinaryOp<false>("RealDiv", kFloatTypes, {"math.realdiv"}, visit_float,
                                [](auto x, auto y) { return x / y; }, simd::Binary::kDiv));
OpRegistrar floordiv_op(BinaryOp<false>("FloorDiv", kNumericTypes, {"math.floordiv", "floordiv"}, visit_numeric,
                                 [](auto x, auto y) { return FloorDivide(x, y); }));
OpRegistrar floormod_op(BinaryOp<false>("FloorMod", kNumericTypes, {"math.floormod", "math.mod", "mod"},
                                 visit_numeric, [](auto x, auto y) { return FloorModulo(x, y); }));
OpRegistrar pow_op(BinaryOp<false>("Pow", kNumericTypes, {"math.pow", "pow"}, visit_numeric,
                            [](auto x, auto y) { return Power(x, y); }));
OpRegistrar max_op(BinaryOp<false>("Maximum", kNumericTypes, {"maximum", "math.maximum"}, visit_numeric,
                            [](auto x, auto y) {
                              if constexpr (std::is_floating_point_v<decltype(x)>) {
                                if (std::isnan(x) || std::isnan(y)) return x + y;  // NaN propagates
                              }
                              return x > y ? x : y;
                            }, simd::Binary::kMax));
OpRegistrar min_op(BinaryOp<false>("Minimum", kNumericTypes, {"minimum", "math.minimum"}, visit_numeric,
                            [](auto x, auto y) {
                              if constexpr (std::is_floating_point_v<decltype(x)>) {
                                if (std::isnan(x) || std::isnan(y)) return x + y;
                              }
                              return x < y ? x : y;
                            }, simd::Binary::kMin));

// Comparisons ---------------------------------------------------------------
OpRegistrar equal_op(BinaryOp<true>("Equal", kAllTypes, {"equal", "math.equal"}, visit_all,
                              [](const auto& x, const auto& y) { return x == y; }));
OpRegistrar not_equal_op(BinaryOp<true>("NotEqual", kAllTypes, {"not_equal", "math.not_equal"}, visit_all,
                                  [](const auto& x, const auto& y) { return x != y; }));
OpRegistrar less_op(BinaryOp<true>("Less", kNumericTypes, {"less", "math.less"}, visit_numeric,
                             [](auto x, auto y) { return x < y; }));
OpRegistrar less_equal_op(BinaryOp<true>("LessEqual", kNumericTypes, {"less_equal", "math.less_equal"},
                                   visit_numeric, [](auto x, auto y) { return x <= y; }));
OpRegistrar greater_op(BinaryOp<true>("Greater", kNumericTypes, {"greater", "math.greater"}, visit_numeric,
                                [](auto x, auto y) { return x > y; }));
OpRegistrar greater_equal_op(BinaryOp<true>("GreaterEqual", kNumericTypes, {"greater_equal", "math.greater_equal"}, visit_numeric,
                                      [](auto x, auto y) { return x >= y; }));

// Logical and bitwise -------------------------------------------------------
OpRegistrar logical_and_op(BinaryOp<false>("LogicalAnd", kBoolType, {"logical_and", "math.logical_and"},
                                    visit_bool, [](bool x, bool y) { return x && y; }));
OpRegistrar logical_or_op(BinaryOp<false>("LogicalOr", kBoolType, {"logical_or", "math.logical_or"},
                                   visit_bool, [](bool x, bool y) { return x || y; }));
OpRegistrar logical_not_op(UnaryOp("LogicalNot", "x", kBoolType, {"logical_not", "math.logical_not"}, visit_bool,
                                   [](bool x) { return !x; }));
OpRegistrar bitwise_and_op(BinaryOp<false>("BitwiseAnd", kIntTypes, {"bitwise.bitwise_and"}, visit_int,
                                    [](auto x, auto y) { return x & y; }));
OpRegistrar bitwise_or_op(BinaryOp<false>("BitwiseOr", kIntTypes, {"bitwise.bitwise_or"}, visit_int,
                                   [](auto x, auto y) { return x | y; }));
OpRegistrar invert_op(UnaryOp("Invert", "x", kIntTypes, {"bitwise.invert"}, visit_int, [](auto x) { return ~x; }));

// Unary math ----------------------------------------------------------------
OpRegistrar neg_op(UnaryOp("Neg", "x", kNumericTypes, {"negative", "math.negative"}, visit_numeric,
                           [](auto x) { return WrapNeg(x); }));
OpRegistrar abs_op(UnaryOp("Abs", "x", kNumericTypes, {"abs", "math.abs"}, visit_numeric,
                           [](auto x) {
                             if constexpr (std::is_floating_point_v<decltype(x)>) {
                               return std::fabs(x);  // also clears the sign of -0.0
                             } else {
                               return x < 0 ? WrapNeg(x) : x;
                             }
                           }));
OpRegistrar square_op(UnaryOp("Square", "x", kNumericTypes, {"square", "math.square"}, visit_numeric,
                              [](auto x) { return WrapMul(x, x); }));
OpRegistrar sqrt_op(UnaryOp("Sqrt", "x", kFloatTypes, {"sqrt", "math.sqrt"}, visit_float,
                            [](auto x) { return std::sqrt(x); }));
OpRegistrar rsqrt_op(UnaryOp("Rsqrt", "x", kFloatTypes, {"math.rsqrt"}, visit_float,
                             [](auto x) { return decltype(x)(1) / std::sqrt(x); }));
OpRegistrar exp_op(SimdFloatUnaryOp("Exp", {"exp", "math.exp"}, simd::Unary::kExp));
OpRegistrar log_op(SimdFloatUnaryOp("Log", {"log", "math.log"}, simd::Unary::kLog));
OpRegistrar tanh_op(SimdFloatUnaryOp("Tanh", {"tanh", "math.tanh", "nn.tanh"}, simd::Unary::kTanh));
OpRegistrar sigmoid_op(SimdFloatUnaryOp("Sigmoid", {"sigmoid", "math.sigmoid", "nn.sigmoid"}, simd::Unary::kSigmoid));
OpRegistrar relu_op(UnaryOp("Relu", "features", kNumericTypes, {"nn.relu"}, visit_numeric,
                            [](auto x) { return x > 0 || x != x ? x : decltype(x)(0); }));  // NaN stays NaN
OpRegistrar sign_op(UnaryOp("Sign", "x", kNumericTypes, {"sign", "math.sign"}, visit_numeric,
                            [](auto x) {
                              if constexpr (std::is_floating_point_v<decltype(x)>) {
                                if (std::isnan(x)) return x;  // sign(NaN) is NaN, as in TensorFlow
                              }
                              return static_cast<decltype(x)>((x > 0) - (x < 0));
                            }));
OpRegistrar reciprocal_op(UnaryOp("Reciprocal", "x", kFloatTypes, {"math.reciprocal"}, visit_float,
                                  [](auto x) { return decltype(x)(1) / x; }));

}  // namespace
}  // namespace treadle
