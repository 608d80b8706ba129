// Reductions along axes (Sum, Mean, Max, Min, Prod, All, Any), ArgMax/ArgMin
// and AddN.
//
// A reduction first collapses the input shape: size-1 dims are dropped and
// neighbouring dims that are all reduced (or all kept) are merged, so any
// reduction becomes a few passes of one [outer, reduced, inner] kernel. The
// two common cases are then tight loops: reducing a contiguous row (inner ==
// 1) and reducing over rows into a contiguous accumulator row (inner > 1).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/simd/vec_kernels.h"
#include "ops/op_helpers.h"

namespace treadle {
namespace {

// ---------------------------------------------------------------- axes

// The values of an int32/int64 tensor (an axis list, already checked to be a
// scalar or vector by the shape function).
std::vector<int64_t> ReadInts(const Tensor& t) {
  std::vector<int64_t> out(t.num_elements());
  if (t.dtype() == DType::kInt32) std::copy(t.data<int32_t>(), t.data<int32_t>() + out.size(), out.begin());
  else std::copy(t.data<int64_t>(), t.data<int64_t>() + out.size(), out.begin());
  return out;
}

// Which dims of a rank-`rank` tensor `axes` reduces. Throws ValueError naming
// the op for an axis out of range or given twice.
std::vector<bool> ReductionMask(const OpDef& op, const std::vector<int64_t>& axes, int rank) {
  std::vector<bool> mask(rank, false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      ThrowValueError(op.name, ": Invalid reduction dimension ", a, " for input with ", rank,
                      " dimension(s) (expected -", rank, " <= axis < ", rank, ")");
    }
    int64_t d = a < 0 ? a + rank : a;
    if (mask[d]) ThrowValueError(op.name, ": Axes contains duplicate dimension: ", a);
    mask[d] = true;
  }
  return mask;
}

PartialShape ReducedShape(const PartialShape& in, const std::vector<bool>& mask, bool keep_dims) {
  Dims out;
  for (size_t d = 0; d < in.dims.size(); ++d) {
    if (!mask[d]) out.push_back(in.dims[d]);
    else if (keep_dims) out.push_back(1);
  }
  return PartialShape(out);
}

std::vector<PartialShape> ReductionShapeFn(const InferContext& c) {
  const PartialShape& in = c.shapes[0];
  bool keep_dims = c.attrs.GetBool("keep_dims");
  const PartialShape& axis_shape = c.shapes[1];
  if (axis_shape.known_rank && axis_shape.rank() > 1) {
    ThrowValueError(c.op.name, ": 'axis' must be a scalar or vector, got shape ", axis_shape.ToString());
  }
  std::optional<std::vector<int64_t>> axes = c.IntValues(1);
  if (!axes) {
    if (keep_dims && in.known_rank) return {PartialShape::UnknownOfRank(in.rank())};
    return {PartialShape::Unknown()};
  }
  if (!in.known_rank) return {PartialShape::Unknown()};
  return {ReducedShape(in, ReductionMask(c.op, *axes, in.rank()), keep_dims)};
}

// The input shape after collapsing: alternating kept and reduced groups.
struct CollapsedShape {
  std::vector<int64_t> sizes;
  std::vector<bool> reduced;
};

CollapsedShape Collapse(const Dims& dims, const std::vector<bool>& mask) {
  CollapsedShape c;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;  // reducing or keeping a size-1 dim is the same
    if (!c.sizes.empty() && c.reduced.back() == mask[d]) {
      c.sizes.back() *= dims[d];
    } else {
      c.sizes.push_back(dims[d]);
      c.reduced.push_back(mask[d]);
    }
  }
  return c;
}

// ---------------------------------------------------------------- reducers

// Accumulator types: float sums and products accumulate in double; integer
// sums and products in uint64, whose wrap-around is defined and whose low bits
// equal TensorFlow's wrapping int32/int64 arithmetic.
template <typename T, bool kWide> struct AccumulatorOf { using type = T; };
template <> struct AccumulatorOf<float, true> { using type = double; };
template <> struct AccumulatorOf<int32_t, true> { using type = uint64_t; };
template <> struct AccumulatorOf<int64_t, true> { using type = uint64_t; };
template <> struct AccumulatorOf<bool, false> { using type = uint8_t; };  // not vector<bool>

template <typename T, typename Acc> Acc Lift(T x) {
  if constexpr (std::is_same_v<Acc, uint64_t> && !std::is_same_v<T, uint64_t>) {
    return static_cast<uint64_t>(static_cast<int64_t>(x));  // sign-extend, then wrap
  } else {
    return static_cast<Acc>(x);
  }
}

struct SumReducer {
  static constexpr bool kWide = true;
  template <typename A> static A Init() { return A(0); }
  template <typename A> static void Combine(A& acc, A x) { acc += x; }
};
struct ProdReducer {
  static constexpr bool kWide = true;
  template <typename A> static A Init() { return A(1); }
  template <typename A> static void Combine(A& acc, A x) { acc *= x; }
};
struct MaxReducer {
  static constexpr bool kWide = false;
  template <typename A> static A Init() {
    if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  }
  // x != x: a NaN wins and then stays (x > NaN is false), as in TensorFlow.
  // Bitwise | (not ||) keeps the loop branch-free, so it vectorises.
  template <typename A> static void Combine(A& acc, A x) {
    const bool take = (x > acc) | (x != x);
    acc = take ? x : acc;
  }
};
struct MinReducer {
  static constexpr bool kWide = false;
  template <typename A> static A Init() {
    if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
  template <typename A> static void Combine(A& acc, A x) {
    const bool take = (x < acc) | (x != x);
    acc = take ? x : acc;
  }
};
struct AllReducer {
  static constexpr bool kWide = false;
  template <typename A> static A Init() { return true; }
  template <typename A> static void Combine(A& acc, A x) { acc = acc && x; }
};
struct AnyReducer {
  static constexpr bool kWide = false;
  template <typename A> static A Init() { return false; }
  template <typename A> static void Combine(A& acc, A x) { acc = acc || x; }
};

// Reduces n contiguous values. Eight independent partial results let the
// compiler vectorise without reassociating (and improve float accuracy).
template <typename R, typename In, typename Acc>
Acc ReduceRow(const In* x, int64_t n) {
  constexpr int kLanes = 8;
  Acc lanes[kLanes];
  for (auto& l : lanes) l = R::template Init<Acc>();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) R::Combine(lanes[l], Lift<In, Acc>(x[i + l]));
  }
  for (; i < n; ++i) R::Combine(lanes[0], Lift<In, Acc>(x[i]));
  for (int l = 1; l < kLanes; ++l) R::Combine(lanes[0], lanes[l]);
  return lanes[0];
}

// Reduce3D's float32 passes that have SIMD kernels (sum into double, max and
// min into float); false when the combination has none.
template <typename R, typename In, typename Acc>
bool SimdReduce3D(const In* in, Acc* out, int64_t outer, int64_t r, int64_t inner) {
  constexpr bool kSum = std::is_same_v<R, SumReducer> && std::is_same_v<Acc, double>;
  constexpr bool kMax = std::is_same_v<R, MaxReducer> && std::is_same_v<Acc, float>;
  constexpr bool kMin = std::is_same_v<R, MinReducer> && std::is_same_v<Acc, float>;
  if constexpr (std::is_same_v<In, float> && (kSum || kMax || kMin)) {
    for (int64_t o = 0; o < outer; ++o) {
      const float* block = in + o * r * inner;
      Acc* acc = out + o * inner;
      if (inner == 1) {
        if constexpr (kSum) *acc = simd::SumF32(block, r);
        if constexpr (kMax) *acc = simd::MaxF32(block, r);
        if constexpr (kMin) *acc = simd::MinF32(block, r);
        continue;
      }
      if constexpr (kSum) {
        std::fill(acc, acc + inner, 0.0);
        simd::SumRowsIntoF32(acc, block, r, inner);
        continue;
      }
      std::copy(block, block + inner, acc);
      for (int64_t k = 1; k < r; ++k) {
        if constexpr (kMax) simd::AccumulateMaxF32(acc, block + k * inner, inner);
        if constexpr (kMin) simd::AccumulateMinF32(acc, block + k * inner, inner);
      }
    }
    return true;
  }
  return false;
}

// out[o, j] = reduce over r of in[o, r, j].
template <typename R, typename In, typename Acc>
void Reduce3D(const In* in, Acc* out, int64_t outer, int64_t r, int64_t inner) {
  if (SimdReduce3D<R, In, Acc>(in, out, outer, r, inner)) return;
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) out[o] = ReduceRow<R, In, Acc>(in + o * r, r);
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    Acc* acc = out + o * inner;
    const In* block = in + o * r * inner;
    for (int64_t j = 0; j < inner; ++j) acc[j] = Lift<In, Acc>(block[j]);
    for (int64_t k = 1; k < r; ++k) {
      const In* row = block + k * inner;
      for (int64_t j = 0; j < inner; ++j) R::Combine(acc[j], Lift<In, Acc>(row[j]));
    }
  }
}

// Reduces `in` (collapsed as `c`, with at least one reduced group) into
// `result`, which has one accumulator per kept element, in order.
template <typename R, typename T, typename Acc>
void ReduceCollapsed(const T* in, CollapsedShape c, std::vector<Acc>& result) {
  // Innermost reduced group first; every pass shrinks the data.
  std::vector<Acc> current, next;
  bool first = true;
  while (true) {
    int g = static_cast<int>(c.sizes.size()) - 1;
    while (g >= 0 && !c.reduced[g]) --g;
    if (g < 0) break;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < g; ++i) outer *= c.sizes[i];
    for (size_t i = g + 1; i < c.sizes.size(); ++i) inner *= c.sizes[i];
    next.resize(outer * inner);
    if (first) Reduce3D<R, T, Acc>(in, next.data(), outer, c.sizes[g], inner);
    else Reduce3D<R, Acc, Acc>(current.data(), next.data(), outer, c.sizes[g], inner);
    first = false;
    current.swap(next);
    // Drop group g; merge the kept groups on either side of it.
    c.sizes.erase(c.sizes.begin() + g);
    c.reduced.erase(c.reduced.begin() + g);
    if (g > 0 && g < static_cast<int>(c.sizes.size()) && !c.reduced[g - 1] && !c.reduced[g]) {
      c.sizes[g - 1] *= c.sizes[g];
      c.sizes.erase(c.sizes.begin() + g);
      c.reduced.erase(c.reduced.begin() + g);
    }
  }
  result.swap(current);
}

template <typename T, typename Acc> T Narrow(Acc a) {
  if constexpr (std::is_same_v<Acc, uint64_t>) return static_cast<T>(static_cast<int64_t>(a));
  else return static_cast<T>(a);
}

// Turns accumulators into outputs: a cast, or for Mean a division by `count`
// (integer division for integer tensors, as in TensorFlow).
template <typename T, typename Acc>
void Finish(const Acc* acc, T* out, int64_t n, bool mean, int64_t count, const char* op) {
  if (!mean) {
    for (int64_t i = 0; i < n; ++i) out[i] = Narrow<T, Acc>(acc[i]);
    return;
  }
  if constexpr (std::is_integral_v<T>) {
    if (count == 0 && n > 0) ThrowInvalidArgument(op, ": the mean of an empty integer tensor is undefined");
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(static_cast<int64_t>(Narrow<T, Acc>(acc[i])) / count);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(acc[i] / static_cast<Acc>(count));
  }
}

template <typename R, typename T>
void RunReduction(const Tensor& in, const std::vector<bool>& mask, Tensor& out, bool mean, const char* op) {
  using Acc = typename AccumulatorOf<T, R::kWide>::type;
  const int64_t n_out = out.num_elements();
  if (n_out == 0) return;
  const int64_t count = in.num_elements() / n_out;
  T* po = out.data<T>();
  std::vector<Acc> acc;
  if (in.num_elements() == 0) {
    acc.assign(n_out, R::template Init<Acc>());  // an empty reduction gives the identity
  } else {
    ReduceCollapsed<R, T, Acc>(in.data<T>(), Collapse(in.shape(), mask), acc);
  }
  Finish<T, Acc>(acc.data(), po, n_out, mean, count, op);
}

template <typename R>
OpDef ReductionOp(const char* name, std::vector<DType> allowed, bool mean, const char* doc) {
  OpDef op;
  op.name = name;
  op.inputs = {{"input", false, "T", std::move(allowed)}, {"axis", false, "Tidx", kIndexTypes}};
  op.outputs = {"output"};
  op.attrs = {{"keep_dims", AttrType::kBool, AttrValue(false)}};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = ReductionShapeFn;
  op.doc = doc;  // public names come from ops/math_ops.py (axis=None needs a wrapper)
  op.kernel = [name, mean](KernelContext& ctx) {
    const Tensor& in = ctx.input(0);
    std::vector<bool> mask = ReductionMask(ctx.op, ReadInts(ctx.input(1)), in.rank());
    const Dims& out_dims = ctx.out_shapes[0].dims;
    if (in.num_elements() > 0 && NumElements(out_dims) == in.num_elements()) {
      // Only size-1 dims are reduced: every result is the one element it covers.
      ctx.set_output(0, in.Reshaped(out_dims));
      return;
    }
    Tensor& out = ctx.allocate_output(0);
    if constexpr (std::is_same_v<R, AllReducer> || std::is_same_v<R, AnyReducer>) {
      RunReduction<R, bool>(in, mask, out, mean, name);
    } else {
      VisitNumeric(in.dtype(), name, [&](auto tag) {
        RunReduction<R, typename decltype(tag)::type>(in, mask, out, mean, name);
      });
    }
  };
  // Max and min saturate: an empty reduction's identity (int32's lowest or
  // highest) must become the 8-bit type's.
  constexpr bool kExtremum = std::is_same_v<R, MaxReducer> || std::is_same_v<R, MinReducer>;
  return WithNarrowTypes(std::move(op), kNarrowTypes, kExtremum ? Narrowing::kSaturate : Narrowing::kWrap);
}

OpRegistrar sum_op(ReductionOp<SumReducer>("Sum", kNumericTypes, false,
                                           "Sum of the elements along `axis`."));
OpRegistrar mean_op(ReductionOp<SumReducer>("Mean", kNumericTypes, true,
                                            "Mean along `axis` (integer division for integer tensors)."));
OpRegistrar prod_op(ReductionOp<ProdReducer>("Prod", kNumericTypes, false,
                                             "Product of the elements along `axis`."));
OpRegistrar max_op(ReductionOp<MaxReducer>("Max", kNumericTypes, false,
                                           "Maximum along `axis` (-inf or the lowest integer when empty)."));
OpRegistrar min_op(ReductionOp<MinReducer>("Min", kNumericTypes, false,
                                           "Minimum along `axis` (inf or the largest integer when empty)."));
OpRegistrar all_op(ReductionOp<AllReducer>("All", kBoolType, false, "Logical and along `axis`."));
OpRegistrar any_op(ReductionOp<AnyReducer>("Any", kBoolType, false, "Logical or along `axis`."));

// ---------------------------------------------------------------- ArgMax / ArgMin

int64_t ArgDimension(const InferContext& c) {
  std::optional<std::vector<int64_t>> v = c.IntValues(1);
  if (!v) return std::numeric_limits<int64_t>::min();
  if (v->size() != 1) {
    ThrowValueError(c.op.name, ": 'dimension' must be a single integer, got ", v->size(), " values");
  }
  return (*v)[0];
}

// The index of the first maximum (or minimum) of each [outer, n, inner] slice;
// a NaN counts as the extreme, as in NumPy.
template <bool kMax, typename T, typename Index>
void ArgExtreme(const T* in, Index* out, int64_t outer, int64_t n, int64_t inner) {
  auto better = [](T x, T best) {
    if constexpr (std::is_floating_point_v<T>) {
      if (best != best) return false;
      if (x != x) return true;
    }
    return kMax ? x > best : x < best;
  };
  for (int64_t o = 0; o < outer; ++o) {
    const T* block = in + o * n * inner;
    Index* dst = out + o * inner;
    if (inner == 1) {
      int64_t best_i = 0;
      T best = block[0];
      for (int64_t k = 1; k < n; ++k) {
        if (better(block[k], best)) {
          best = block[k];
          best_i = k;
        }
      }
      dst[0] = static_cast<Index>(best_i);
      continue;
    }
    std::vector<T> best(block, block + inner);
    std::fill(dst, dst + inner, Index(0));
    for (int64_t k = 1; k < n; ++k) {
      const T* row = block + k * inner;
      for (int64_t j = 0; j < inner; ++j) {
        if (better(row[j], best[j])) {
          best[j] = row[j];
          dst[j] = static_cast<Index>(k);
        }
      }
    }
  }
}

template <bool kMax>
OpDef ArgOp(const char* name) {
  OpDef op;
  op.name = name;
  op.inputs = {{"input", false, "T", kNumericTypes}, {"dimension", false, "Tidx", kIndexTypes}};
  op.outputs = {"output"};
  op.attrs = {{"output_type", AttrType::kType, AttrValue(DType::kInt64)}};
  op.dtype_fn = [name](const InferContext& c) {
    DType t = c.attrs.GetType("output_type");
    if (t != DType::kInt32 && t != DType::kInt64) {
      ThrowTypeError(name, ": output_type must be int32 or int64, got ", DTypeName(t));
    }
    return std::vector<DType>{t};
  };
  op.shape_fn = [](const InferContext& c) {
    const PartialShape& in = c.shapes[0];
    if (!in.known_rank) return std::vector<PartialShape>{PartialShape::Unknown()};
    int64_t dim = ArgDimension(c);
    if (dim == std::numeric_limits<int64_t>::min()) {
      return std::vector<PartialShape>{PartialShape::UnknownOfRank(std::max(in.rank() - 1, 0))};
    }
    int64_t d = NormalizeAxis(c.op, dim, in.rank());
    Dims out = in.dims;
    out.erase(out.begin() + d);
    return std::vector<PartialShape>{PartialShape(out)};
  };
  op.kernel = [name](KernelContext& ctx) {
    const Tensor& in = ctx.input(0);
    const Tensor& dim_t = ctx.input(1);
    int64_t dim = ReadInts(dim_t).at(0);
    int64_t d = NormalizeAxis(ctx.op, dim, in.rank());
    int64_t n = in.dim(static_cast<int>(d));
    Tensor& out = ctx.allocate_output(0);
    if (out.num_elements() == 0) return;
    if (n == 0) {
      ThrowInvalidArgument(name, ": Reduction axis ", dim, " is empty in shape ", DimsToString(in.shape()));
    }
    if (out.dtype() == DType::kInt32 && n > std::numeric_limits<int32_t>::max()) {
      ThrowInvalidArgument(name, ": dimension of size ", n, " does not fit output_type int32");
    }
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < d; ++i) outer *= in.dim(i);
    for (int i = static_cast<int>(d) + 1; i < in.rank(); ++i) inner *= in.dim(i);
    VisitNumeric(in.dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (out.dtype() == DType::kInt32) {
        ArgExtreme<kMax, T, int32_t>(in.data<T>(), out.data<int32_t>(), outer, n, inner);
      } else {
        ArgExtreme<kMax, T, int64_t>(in.data<T>(), out.data<int64_t>(), outer, n, inner);
      }
    });
  };
  op.doc = kMax ? "Index of the largest value along `dimension`." : "Index of the smallest value along `dimension`.";
  return WithNarrowTypes(std::move(op), kNarrowTypes);
}

OpRegistrar argmax_op(ArgOp<true>("ArgMax"));
OpRegistrar argmin_op(ArgOp<false>("ArgMin"));

// ---------------------------------------------------------------- AddN

OpDef MakeAddN() {
  OpDef op;
  op.name = "AddN";
  op.inputs = {{"inputs", true, "T", kNumericTypes}};
  op.outputs = {"sum"};
  op.dtype_fn = [](const InferContext& c) {
    if (c.dtypes.empty()) ThrowValueError("AddN: needs at least one input");
    return std::vector<DType>{c.dtypes[0]};
  };
  op.shape_fn = [](const InferContext& c) {
    // Every input must have the same shape (no broadcasting); the result is
    // the most specific shape the inputs agree on.
    PartialShape merged;
    for (const PartialShape& s : c.shapes) {
      if (!s.known_rank) continue;
      if (!merged.known_rank) {
        merged = s;
        continue;
      }
      bool ok = merged.rank() == s.rank();
      for (int d = 0; ok && d < s.rank(); ++d) {
        if (merged.dims[d] < 0) merged.dims[d] = s.dims[d];
        else if (s.dims[d] >= 0 && s.dims[d] != merged.dims[d]) ok = false;
      }
      if (!ok) {
        ThrowValueError("AddN: all inputs must have the same shape, got ", merged.ToString(), " and ",
                        s.ToString());
      }
    }
    return std::vector<PartialShape>{merged};
  };
  op.kernel = [](KernelContext& ctx) {
    Tensor& out = ctx.allocate_output(0);
    const int64_t n = out.num_elements();
    VisitNumeric(out.dtype(), "AddN", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* po = out.data<T>();
      const T* first = ctx.input(0).data<T>();
      std::copy(first, first + n, po);
      for (int k = 1; k < ctx.num_inputs(); ++k) {
        const T* pk = ctx.input(k).data<T>();
        if constexpr (std::is_integral_v<T>) {
          using U = std::make_unsigned_t<T>;  // wraps on overflow, as TensorFlow's integers do
          for (int64_t i = 0; i < n; ++i) po[i] = static_cast<T>(static_cast<U>(po[i]) + static_cast<U>(pk[i]));
        } else {
          for (int64_t i = 0; i < n; ++i) po[i] += pk[i];
        }
      }
    });
  };
  op.doc = "Elementwise sum of a list of tensors of one shape and dtype.";
  return WithNarrowTypes(std::move(op), kNarrowTypes);
}

OpRegistrar add_n_op(MakeAddN());

}  // namespace
}  // namespace treadle
