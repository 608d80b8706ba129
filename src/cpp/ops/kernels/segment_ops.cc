// Segment reductions and Repeat: the kernels behind
// td.math.segment_sum, td.math.unsorted_segment_sum/max (and _mean, built on
// the sum), td.repeat and td.RaggedTensor's rows (a ragged row reduction is a segment reduction
// of the values by their row ids; the row ids are Repeat of the row numbers).
// Each kernel checks every id or count before it writes anything.
#include <algorithm>
#include <limits>

#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"

namespace treadle {
namespace {

// ---------------------------------------------------------------- shapes

// [num_segments, *data.shape[ids.rank:]], where segment_ids' shape must be a
// prefix of data's. `num` is the number of segments when known.
PartialShape SegmentShape(const InferContext& c, std::optional<int64_t> num) {
  const PartialShape& data = c.shapes[0];
  const PartialShape& ids = c.shapes[1];
  if (!data.known_rank || !ids.known_rank) return PartialShape::Unknown();
  if (ids.rank() > data.rank()) {
    ThrowValueError(c.op.name, ": segment_ids must be a prefix of data's shape, got ", ids.ToString(), " and ",
                    data.ToString());
  }
  for (int d = 0; d < ids.rank(); ++d) {
    if (ids.dims[d] >= 0 && data.dims[d] >= 0 && ids.dims[d] != data.dims[d]) {
      ThrowValueError(c.op.name, ": segment_ids must be a prefix of data's shape, got ", ids.ToString(), " and ",
                      data.ToString());
    }
  }
  Dims out = {num ? *num : kUnknownDim};
  out.insert(out.end(), data.dims.begin() + ids.rank(), data.dims.end());
  return PartialShape(out);
}

std::optional<int64_t> NumSegmentsInput(const InferContext& c) {
  auto num = ScalarIntInput(c, 2, "num_segments");
  if (num && *num < 0) ThrowValueError(c.op.name, ": num_segments must be >= 0, got ", *num);
  return num;
}

// The run-time checks shared by the kernels: ids' shape a prefix of data's.
void CheckSegmentIds(const OpDef& op, const Tensor& data, const Tensor& ids) {
  bool ok = ids.rank() <= data.rank();
  for (int d = 0; ok && d < ids.rank(); ++d) ok = ids.dim(d) == data.dim(d);
  if (!ok) {
    ThrowInvalidArgument(op.name, ": segment_ids must be a prefix of data's shape, got ",
                         PartialShape(ids.shape()).ToString(), " and ", PartialShape(data.shape()).ToString());
  }
}

Dims SegmentOutputDims(const Tensor& data, const Tensor& ids, int64_t num) {
  Dims out = {num};
  out.insert(out.end(), data.shape().begin() + ids.rank(), data.shape().end());
  return out;
}

// ---------------------------------------------------------------- the reductions

// Checks every id against `num` before anything is written; returns whether
// the ids are sorted (non-decreasing), as a ragged tensor's row ids are.
template <typename Index>
bool CheckIdsInRange(const OpDef& op, const Index* ids, int64_t rows, int64_t num) {
  bool sorted = true;
  for (int64_t r = 0; r < rows; ++r) {
    if (ids[r] >= num) {
      ThrowInvalidArgument(op.name, ": segment_ids[", r, "] = ", ids[r], " is out of range [0, ", num, ")");
    }
    if (r > 0 && ids[r] < ids[r - 1]) sorted = false;
  }
  return sorted;
}

enum class Reduce { kSum, kMax };

// An empty segment: 0 for a sum; for a max the lowest value of the type, as in TensorFlow.
template <Reduce kind, typename T>
constexpr T ReduceInit() {
  return kind == Reduce::kSum ? T(0) : std::numeric_limits<T>::lowest();
}

template <Reduce kind, typename T>
inline T Combine(T acc, T value) {
  if constexpr (kind == Reduce::kSum) {
    return acc + value;
  } else {
    return value > acc ? value : acc;
  }
}

// acc[j] = Combine(acc[j], row[j]) for j < inner. An inline loop the compiler
// vectorizes: calling simd::BinaryF32 per row measured slower (rows of 150
// floats are too short to pay for the dispatch).
template <Reduce kind, typename T>
void CombineRowInto(T* __restrict acc, const T* __restrict row, int64_t inner) {
  for (int64_t j = 0; j < inner; ++j) acc[j] = Combine<kind>(acc[j], row[j]);
}

// acc = the reduction of the contiguous rows [begin, end) of data (rows of
// `inner`), from the reduction's start value. The first row is combined with
// that start as it is written, so there is no separate pass to fill acc; the
// result has the same bits as filling and then combining row by row.
// Not inlined: one copy per (kind, T) whichever id or split type calls it,
// which measured steadier than the copies inlined into each caller (their
// speed varied by 20% with the index type).
template <Reduce kind, typename T>
__attribute__((noinline)) void ReduceRowRange(T* __restrict acc, const T* data, int64_t begin, int64_t end,
                                              int64_t inner) {
  const T init = ReduceInit<kind, T>();
  if (begin == end) {
    std::fill(acc, acc + inner, init);
    return;
  }
  const T* __restrict first = data + begin * inner;
  for (int64_t j = 0; j < inner; ++j) acc[j] = Combine<kind>(init, first[j]);
  for (int64_t r = begin + 1; r < end; ++r) CombineRowInto<kind>(acc, data + r * inner, inner);
}

// out[s] = the reduction of the rows r with ids[r] == s (negative ids
// dropped, as in TensorFlow). Ids are checked first. Sorted ids (a ragged
// tensor's row ids, the ids of td.repeat's gradient) take a fast path: each
// segment's rows are contiguous, so each output row is made in one pass while
// it is in cache (ReduceRowRange), instead of filling the whole output first
// and coming back to each row once per id. Both paths combine
// the rows in the same order, from the same start, so they give the same bits.
template <Reduce kind, typename T, typename Index>
void SegmentReduce(const OpDef& op, const T* data, const Index* ids, int64_t rows, int64_t inner, int64_t num,
                   T* out) {
  if (CheckIdsInRange(op, ids, rows, num)) {
    int64_t r = 0;
    while (r < rows && ids[r] < 0) ++r;
    for (int64_t s = 0; s < num; ++s) {
      const int64_t begin = r;
      while (r < rows && ids[r] == s) ++r;
      ReduceRowRange<kind>(out + s * inner, data, begin, r, inner);
    }
    return;
  }
  std::fill(out, out + num * inner, ReduceInit<kind, T>());
  for (int64_t r = 0; r < rows; ++r) {
    if (ids[r] < 0) continue;
    CombineRowInto<kind>(out + static_cast<int64_t>(ids[r]) * inner, data + r * inner, inner);
  }
}

template <Reduce kind>
void SegmentReduceKernel(KernelContext& ctx, int64_t num) {
  const Tensor& data = ctx.input(0);
  const Tensor& ids = ctx.input(1);
  Tensor& out = ctx.allocate_output(0, SegmentOutputDims(data, ids, num));
  const int64_t rows = ids.num_elements();
  const int64_t inner = DimProduct(data.shape(), ids.rank(), data.rank());
  VisitInt(ids.dtype(), ctx.op.name.c_str(), [&](auto itag) {
    using Index = typename decltype(itag)::type;
    VisitNumeric(data.dtype(), ctx.op.name.c_str(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      SegmentReduce<kind, T, Index>(ctx.op, data.data<T>(), ids.data<Index>(), rows, inner, num, out.data<T>());
    });
  });
}

template <Reduce kind>
void UnsortedSegmentKernel(KernelContext& ctx) {
  CheckSegmentIds(ctx.op, ctx.input(0), ctx.input(1));
  const Tensor& n = ctx.input(2);
  if (n.num_elements() != 1) ThrowInvalidArgument(ctx.op.name, ": num_segments must be a scalar");
  const int64_t num = ReadInts(n)[0];
  if (num < 0) ThrowInvalidArgument(ctx.op.name, ": num_segments must be >= 0, got ", num);
  SegmentReduceKernel<kind>(ctx, num);
}

// SegmentSum: ids sorted and non-negative; the segments are 0..ids[-1].
void SortedSegmentSumKernel(KernelContext& ctx) {
  const Tensor& ids = ctx.input(1);
  if (ids.rank() != 1) ThrowInvalidArgument("SegmentSum: segment_ids must be a vector, got rank ", ids.rank());
  CheckSegmentIds(ctx.op, ctx.input(0), ids);
  const std::vector<int64_t> v = ReadInts(ids);
  for (size_t r = 0; r < v.size(); ++r) {
    if (v[r] < 0 || (r > 0 && v[r] < v[r - 1])) {
      ThrowInvalidArgument("SegmentSum: segment_ids must be sorted and non-negative; segment_ids[", r, "] = ", v[r],
                           r > 0 ? StrCat(" follows ", v[r - 1]) : std::string());
    }
  }
  SegmentReduceKernel<Reduce::kSum>(ctx, v.empty() ? 0 : v.back() + 1);
}

OpDef MakeUnsortedSegmentOp(const char* name, KernelFn kernel, const char* api, const char* doc) {
  OpDef op;
  op.name = name;
  op.inputs = {{"data", false, "T", kNumericTypes},
               {"segment_ids", false, "Tindices", kIndexTypes},
               {"num_segments", false, "Tnumsegments", kIndexTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{SegmentShape(c, NumSegmentsInput(c))}; };
  op.kernel = std::move(kernel);
  op.api_names = {api};
  op.doc = doc;
  return op;
}

OpRegistrar unsorted_segment_sum_op(WithNarrowTypes(MakeUnsortedSegmentOp(
    "UnsortedSegmentSum", UnsortedSegmentKernel<Reduce::kSum>, "math.unsorted_segment_sum",
    "output[s, ...] = sum of data[i..., ...] over the positions i where segment_ids[i...] == s "
    "(negative ids are dropped; an empty segment is 0)."), kNarrowTypes));

OpRegistrar unsorted_segment_max_op(WithNarrowTypes(MakeUnsortedSegmentOp(
    "UnsortedSegmentMax", UnsortedSegmentKernel<Reduce::kMax>, "math.unsorted_segment_max",
    "output[s, ...] = max of data[i..., ...] over the positions i where segment_ids[i...] == s "
    "(negative ids are dropped; an empty segment is the lowest value of the dtype)."),
    kNarrowTypes, Narrowing::kSaturate));  // an empty segment's int32 lowest becomes the 8-bit lowest

OpDef MakeSegmentSum() {
  OpDef op;
  op.name = "SegmentSum";
  op.inputs = {{"data", false, "T", kNumericTypes}, {"segment_ids", false, "Tindices", kIndexTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) {
    CheckInputRank(c, 1, 1, "segment_ids");
    std::optional<int64_t> num;
    if (const Tensor* ids = c.value(1)) {
      const std::vector<int64_t> v = ReadInts(*ids);
      num = v.empty() ? 0 : v.back() + 1;
      if (*num < 0) num.reset();  // the kernel reports it
    }
    return std::vector<PartialShape>{SegmentShape(c, num)};
  };
  op.kernel = SortedSegmentSumKernel;
  op.api_names = {"math.segment_sum"};
  op.doc = "output[s, ...] = sum of data[i, ...] over the i where segment_ids[i] == s; segment_ids must be sorted "
           "and non-negative, and there are segment_ids[-1] + 1 segments.";
  return op;
}

OpRegistrar segment_sum_op(WithNarrowTypes(MakeSegmentSum(), kNarrowTypes));

// ---------------------------------------------------------------- RaggedRowSum

// The sum of each row of a ragged tensor given by its row_splits: row r is
// values[splits[r]:splits[r + 1]]. A row is a contiguous run of values, so
// this needs no row ids, and its gradient (Repeat of the incoming gradient by
// the row lengths) needs no mask of dropped ids, as UnsortedSegmentSum's does.
template <typename Split>
void CheckRowSplits(const OpDef& op, const Split* splits, int64_t n, int64_t nvalues) {
  if (n < 1) ThrowInvalidArgument(op.name, ": row_splits must have at least one entry");
  if (splits[0] != 0) ThrowInvalidArgument(op.name, ": row_splits[0] must be 0, got ", splits[0]);
  for (int64_t r = 1; r < n; ++r) {
    if (splits[r] < splits[r - 1]) {
      ThrowInvalidArgument(op.name, ": row_splits must be non-decreasing; row_splits[", r, "] = ", splits[r],
                           " follows ", splits[r - 1]);
    }
  }
  if (splits[n - 1] != nvalues) {
    ThrowInvalidArgument(op.name, ": row_splits[-1] = ", splits[n - 1], " but values has ", nvalues, " rows");
  }
}

void RaggedRowSumKernel(KernelContext& ctx) {
  const Tensor& values = ctx.input(0);
  const Tensor& splits = ctx.input(1);
  if (values.rank() < 1) ThrowInvalidArgument(ctx.op.name, ": values must have rank >= 1");
  if (splits.rank() != 1) ThrowInvalidArgument(ctx.op.name, ": row_splits must be a vector, got rank ", splits.rank());
  const int64_t nrows = splits.dim(0) - 1;
  Dims out_dims = values.shape();
  out_dims[0] = std::max<int64_t>(nrows, 0);
  const int64_t inner = DimProduct(values.shape(), 1, values.rank());
  VisitInt(splits.dtype(), ctx.op.name.c_str(), [&](auto itag) {
    using Split = typename decltype(itag)::type;
    const Split* sp = splits.data<Split>();
    CheckRowSplits(ctx.op, sp, splits.dim(0), values.dim(0));
    Tensor& out = ctx.allocate_output(0, out_dims);
    VisitNumeric(values.dtype(), ctx.op.name.c_str(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* data = values.data<T>();
      T* dst = out.data<T>();
      for (int64_t r = 0; r < nrows; ++r) {
        ReduceRowRange<Reduce::kSum>(dst + r * inner, data, static_cast<int64_t>(sp[r]),
                                     static_cast<int64_t>(sp[r + 1]), inner);
      }
    });
  });
}

OpDef MakeRaggedRowSum() {
  OpDef op;
  op.name = "RaggedRowSum";
  op.inputs = {{"values", false, "T", kNumericTypes}, {"row_splits", false, "Tsplits", kIndexTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) {
    CheckInputRank(c, 1, 1, "row_splits");
    const PartialShape& values = c.shapes[0];
    if (!values.known_rank) return std::vector<PartialShape>{PartialShape::Unknown()};
    if (values.rank() < 1) ThrowValueError(c.op.name, ": values must have rank >= 1");
    Dims out = values.dims;
    const PartialShape& splits = c.shapes[1];
    out[0] = splits.known_rank && splits.dims[0] >= 1 ? splits.dims[0] - 1 : kUnknownDim;
    return std::vector<PartialShape>{PartialShape(out)};
  };
  op.kernel = RaggedRowSumKernel;
  op.doc = "output[r, ...] = sum of values[row_splits[r]:row_splits[r + 1], ...] (0 for an empty row): the row "
           "sums of a ragged tensor, td.reduce_sum(rt, axis=1).";
  return op;
}

OpRegistrar ragged_row_sum_op(WithNarrowTypes(MakeRaggedRowSum(), kNarrowTypes));

// ---------------------------------------------------------------- Repeat

// Per entry along the axis, how many copies (a scalar applies to every entry).
std::vector<int64_t> RepeatCounts(const OpDef& op, const Tensor& repeats, int64_t n) {
  if (repeats.rank() > 1) ThrowInvalidArgument(op.name, ": repeats must be a scalar or a vector");
  std::vector<int64_t> r = ReadInts(repeats);
  if (r.size() == 1 && n != 1) r.assign(n, r[0]);
  if (static_cast<int64_t>(r.size()) != n) {
    ThrowInvalidArgument(op.name, ": repeats has ", r.size(), " entries but the axis has ", n);
  }
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i] < 0) ThrowInvalidArgument(op.name, ": repeats[", i, "] = ", r[i], " is negative");
  }
  return r;
}

PartialShape RepeatShape(const InferContext& c) {
  const PartialShape& in = c.shapes[0];
  if (c.shapes[1].known_rank && c.shapes[1].rank() > 1) ThrowValueError(c.op.name, ": repeats must be a scalar or a vector");
  if (!in.known_rank) return PartialShape::Unknown();
  if (in.rank() == 0) ThrowValueError(c.op.name, ": input must have rank >= 1 (td.repeat flattens a scalar)");
  const int64_t axis = NormalizeAxis(c.op, c.attrs.GetInt("axis"), in.rank());
  Dims out = in.dims;
  out[axis] = kUnknownDim;
  const Tensor* repeats = c.value(1);
  if (repeats && in.dims[axis] >= 0) {
    int64_t total = 0;
    for (int64_t r : RepeatCounts(c.op, *repeats, in.dims[axis])) total += r;
    out[axis] = total;
    CheckedProduct(c.op, out);
  }
  return PartialShape(out);
}

void RepeatKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (in.rank() == 0) ThrowInvalidArgument(ctx.op.name, ": input must have rank >= 1");
  const int axis = static_cast<int>(NormalizeAxis(ctx.op, ctx.attrs.GetInt("axis"), in.rank()));
  const int64_t n = in.dim(axis);
  const std::vector<int64_t> counts = RepeatCounts(ctx.op, ctx.input(1), n);
  Dims out_dims = in.shape();
  int64_t total = 0;
  for (int64_t r : counts) {
    total += r;
    if (total > kMaxElements) ThrowInvalidArgument(ctx.op.name, ": the result would be too large");
  }
  out_dims[axis] = total;
  CheckedProduct(ctx.op, out_dims);
  Tensor& out = ctx.allocate_output(0, out_dims);
  const int64_t outer = DimProduct(in.shape(), 0, axis);
  const int64_t inner = DimProduct(in.shape(), axis + 1, in.rank());
  const DType t = in.dtype();
  const size_t esize = DTypeSize(t);
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < n; ++i) {
      const char* row = src + (o * n + i) * inner * esize;
      for (int64_t k = 0; k < counts[i]; ++k) {
        CopyElements(t, dst, row, inner);
        dst += inner * esize;
      }
    }
  }
}

OpDef MakeRepeat() {
  OpDef op;
  op.name = "Repeat";
  op.inputs = {{"input", false, "T", kAllTypes}, {"repeats", false, "Trepeats", kIndexTypes}};
  op.outputs = {"output"};
  op.attrs = {{"axis", AttrType::kInt, AttrValue(int64_t{0})}};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{RepeatShape(c)}; };
  op.kernel = RepeatKernel;
  op.doc = "Each entry of `input` along `axis` repeated repeats[i] times (a scalar repeats every entry alike).";
  return op;
}

OpRegistrar repeat_op(MakeRepeat());


}  // namespace
}  // namespace treadle
