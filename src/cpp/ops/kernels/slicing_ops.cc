// StridedSlice: NumPy-style basic indexing (`t[1:, ::-2, ..., None, 3]`) with
// TensorFlow's encoding as begin/end/strides vectors and five bit masks.
//
// The "sparse" spec (one entry per index the user wrote, an ellipsis standing
// for any number of dimensions) is first expanded into a "dense" spec with one
// entry per input dimension; each entry is then resolved against the input's
// size into a begin, stride and element count.
#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"

namespace treadle {
namespace {

constexpr int64_t kNewAxis = -1;
constexpr int64_t kShrinkAxis = -2;

struct SliceMasks {
  int64_t begin, end, ellipsis, new_axis, shrink;
  bool bit(int64_t mask, int64_t i) const { return i < 63 && ((mask >> i) & 1); }
};

SliceMasks ReadMasks(const AttrMap& attrs) {
  return {attrs.GetInt("begin_mask"), attrs.GetInt("end_mask"), attrs.GetInt("ellipsis_mask"),
          attrs.GetInt("new_axis_mask"), attrs.GetInt("shrink_axis_mask")};
}

// One entry per input dimension.
struct DenseEntry {
  int64_t begin = 0, end = 0, stride = 1;
  bool begin_masked = false, end_masked = false, shrink = false;
  bool whole = false;  // covered by an ellipsis: the entire dimension, whatever the values
};

struct DenseSpec {
  std::vector<DenseEntry> entries;
  // For each output dimension, in order: the input dimension it comes from, or
  // kNewAxis; shrunk input dimensions appear as kShrinkAxis (and produce none).
  std::vector<int64_t> gather;
};

// Expands the sparse spec. `begin`/`end`/`strides` may be null (unknown
// values): the structure depends only on the masks and the spec's length.
DenseSpec BuildDenseSpec(const OpDef& op, int64_t rank, int64_t sparse_len, const SliceMasks& m,
                         const std::vector<int64_t>* begin, const std::vector<int64_t>* end,
                         const std::vector<int64_t>* strides) {
  // TensorFlow's rule: at most one bit of ellipsis_mask, whatever the spec's
  // length (a bit past the spec's end is not ignored).
  const auto ellipsis_bits = static_cast<uint64_t>(m.ellipsis);
  if (ellipsis_bits & (ellipsis_bits - 1)) {
    ThrowInvalidArgument(op.name, ": multiple ellipses in slice spec not allowed (ellipsis_mask ", m.ellipsis,
                         " sets more than one bit)");
  }
  int64_t ellipsis_at = -1;
  for (int64_t i = 0; i < sparse_len; ++i) {
    if (!m.bit(m.ellipsis, i)) continue;
    if (ellipsis_at >= 0) ThrowValueError(op.name, ": multiple ellipses in slice spec not allowed");
    ellipsis_at = i;
  }
  // Without an ellipsis, the spec behaves as if one ended it.
  const bool implicit_ellipsis = ellipsis_at < 0;
  const int64_t n = implicit_ellipsis ? sparse_len + 1 : sparse_len;
  if (implicit_ellipsis) ellipsis_at = sparse_len;
  int64_t new_axes_after_ellipsis = 0;
  for (int64_t i = ellipsis_at + 1; i < sparse_len; ++i) new_axes_after_ellipsis += m.bit(m.new_axis, i);

  DenseSpec spec;
  spec.entries.resize(rank);
  int64_t full = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i == ellipsis_at) {
      const int64_t next = std::min(rank - (n - i) + 1 + new_axes_after_ellipsis, rank);
      for (; full < next; ++full) {
        DenseEntry& e = spec.entries[full];
        e.begin_masked = e.end_masked = e.whole = true;
        spec.gather.push_back(full);
      }
    } else if (m.bit(m.new_axis, i)) {
      spec.gather.push_back(kNewAxis);
    } else {
      if (full >= rank) {
        ThrowValueError(op.name, ": index out of range using input dim ", full, "; input has only ", rank, " dims");
      }
      DenseEntry& e = spec.entries[full];
      if (begin) e.begin = (*begin)[i];
      if (end) e.end = (*end)[i];
      if (strides) e.stride = (*strides)[i];
      e.begin_masked = m.bit(m.begin, i);
      e.end_masked = m.bit(m.end, i);
      e.shrink = m.bit(m.shrink, i);
      spec.gather.push_back(e.shrink ? kShrinkAxis : full);
      ++full;
    }
  }
  return spec;
}

// A dense entry resolved against a dimension of known size.
struct ResolvedDim {
  int64_t begin, stride, size;
};

ResolvedDim Resolve(const OpDef& op, const DenseEntry& e, int64_t dim, int64_t index) {
  if (e.stride == 0) ThrowValueError(op.name, ": strides[", index, "] must be non-zero");
  if (e.shrink) {
    if (e.stride <= 0) ThrowValueError(op.name, ": only stride 1 allowed on non-range indexing");
    const int64_t fwd = e.begin < 0 ? dim + e.begin : e.begin;
    if (fwd < 0 || fwd >= dim) {
      ThrowValueError(op.name, ": slice index ", e.begin, " of dimension ", index, " out of bounds (size ", dim, ")");
    }
    return {fwd, 1, 1};
  }
  const bool forward = e.stride > 0;
  // Valid positions are [0, dim) going forward, and [-1, dim - 1] going backward
  // where -1 means "before the first element".
  const int64_t lo = forward ? 0 : -1, hi = forward ? dim : dim - 1;
  auto canonical = [&](int64_t x, bool masked, bool is_begin) {
    if (masked) return (is_begin == forward) ? lo : hi;
    const int64_t fwd = x < 0 ? dim + x : x;
    return std::clamp(fwd, lo, hi);
  };
  const int64_t b = canonical(e.begin, e.begin_masked, true);
  const int64_t en = canonical(e.end, e.end_masked, false);
  const int64_t interval = en - b;
  int64_t size = 0;
  if (interval != 0 && (interval < 0) == (e.stride < 0)) {
    size = interval / e.stride + (interval % e.stride != 0);
  }
  return {b, e.stride, size};
}

// Everything the shape function and the kernel need to know of one slice.
struct SliceAnalysis {
  PartialShape output;
  std::vector<ResolvedDim> dims;  // per input dimension; filled when everything is known
};

SliceAnalysis AnalyzeSlice(const OpDef& op, const PartialShape& in, int64_t sparse_len, const SliceMasks& m,
                           const std::vector<int64_t>* begin, const std::vector<int64_t>* end,
                           const std::vector<int64_t>* strides) {
  SliceAnalysis result;
  if (!in.known_rank || sparse_len < 0) return result;  // unknown output shape
  const int64_t rank = in.rank();
  DenseSpec spec = BuildDenseSpec(op, rank, sparse_len, m, begin, end, strides);
  const bool values_known = begin && end && strides;
  Dims size(rank, kUnknownDim);
  if (values_known) result.dims.resize(rank);
  for (int64_t i = 0; i < rank; ++i) {
    const DenseEntry& e = spec.entries[i];
    if (e.shrink) size[i] = 1;
    if (e.whole) size[i] = in.dims[i];
    if (!values_known) continue;
    if (in.dims[i] < 0) {
      if (e.stride == 0) ThrowValueError(op.name, ": strides[", i, "] must be non-zero");
      continue;
    }
    result.dims[i] = Resolve(op, e, in.dims[i], i);
    size[i] = result.dims[i].size;
  }
  Dims out;
  for (int64_t g : spec.gather) {
    if (g == kNewAxis) out.push_back(1);
    else if (g != kShrinkAxis) out.push_back(size[g]);
  }
  CheckOutputRank(op, static_cast<int64_t>(out.size()));
  result.output = PartialShape(out);
  return result;
}

// The spec's length from the static shapes of begin, end and strides.
int64_t SparseLength(const InferContext& c) {
  int64_t len = kUnknownDim;
  for (int i = 1; i <= 3; ++i) {
    const PartialShape& s = c.shapes[i];
    if (!s.known_rank) continue;
    if (s.rank() != 1 || (len >= 0 && s.dims[0] >= 0 && s.dims[0] != len)) {
      ThrowValueError(c.op.name, ": expected begin, end, and strides to be 1D equal size tensors, but got shapes ",
                      c.shapes[1].ToString(), ", ", c.shapes[2].ToString(), ", and ", c.shapes[3].ToString(),
                      " instead");
    }
    if (s.dims[0] >= 0) len = s.dims[0];
  }
  if (len > 64) ThrowValueError(c.op.name, ": slice spec has ", len, " entries, more than 64");
  return len;
}

SliceAnalysis AnalyzeCall(const InferContext& c) {
  const int64_t len = SparseLength(c);
  auto begin = c.IntValues(1), end = c.IntValues(2), strides = c.IntValues(3);
  return AnalyzeSlice(c.op, c.shapes[0], len, ReadMasks(c.attrs), begin ? &*begin : nullptr,
                      end ? &*end : nullptr, strides ? &*strides : nullptr);
}

void StridedSliceKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const std::vector<int64_t> begin = ReadInts(ctx.input(1)), end = ReadInts(ctx.input(2)),
                             strides = ReadInts(ctx.input(3));
  SliceAnalysis a = AnalyzeSlice(ctx.op, Known(in), static_cast<int64_t>(begin.size()), ReadMasks(ctx.attrs),
                                 &begin, &end, &strides);
  const Dims& out_shape = a.output.dims;
  bool whole = true;
  for (int i = 0; i < in.rank(); ++i) {
    const ResolvedDim& r = a.dims[i];
    whole = whole && r.begin == 0 && r.stride == 1 && r.size == in.dim(i);
  }
  if (whole) {  // nothing is cut: share the input's buffer
    ctx.set_output(0, in.Reshaped(out_shape));
    return;
  }
  Tensor& out = ctx.allocate_output(0, out_shape);
  if (out.num_elements() == 0) return;
  const Dims in_strides = RowMajorStrides(in.shape());
  Dims copy_dims(in.rank()), copy_strides(in.rank());
  int64_t offset = 0;
  for (int i = 0; i < in.rank(); ++i) {
    offset += a.dims[i].begin * in_strides[i];
    copy_dims[i] = a.dims[i].size;
    copy_strides[i] = a.dims[i].stride * in_strides[i];
  }
  StridedCopy(in.dtype(), ElementPtr(in, offset), copy_dims, copy_strides, static_cast<char*>(out.raw_data()));
}

OpDef MakeStridedSlice() {
  OpDef op;
  op.name = "StridedSlice";
  op.inputs = {{"input", false, "T", kAllTypes},
               {"begin", false, "Index", kIndexTypes},
               {"end", false, "Index", kIndexTypes},
               {"strides", false, "Index", kIndexTypes}};
  op.outputs = {"output"};
  for (const char* mask : {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"}) {
    op.attrs.push_back({mask, AttrType::kInt, AttrValue(int64_t{0})});
  }
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) {
    SliceAnalysis a = AnalyzeCall(c);
    return std::vector<PartialShape>{a.output};
  };
  op.kernel = StridedSliceKernel;
  op.doc = "Basic indexing: elements begin, begin + stride, ... before end in each dimension, with TensorFlow's "
           "begin/end/ellipsis/new-axis/shrink-axis masks.";
  return op;
}

OpRegistrar strided_slice_op(WithNarrowTypes(MakeStridedSlice(), kNarrowTypes));

// ---------------------------------------------------------------- StridedSliceGrad

// Writes the dense `src` (shape `dims`) to dst[sum_k idx[k] * strides[k]]:
// the inverse of StridedCopy, for the elements a slice picked.
template <typename E>
void StridedScatter(const Dims& dims, const Dims& strides, int d, E* dst, const E*& next) {
  const int rank = static_cast<int>(dims.size());
  if (rank == 0) {
    *dst = *next++;
  } else if (d == rank - 1) {
    const int64_t s = strides[d];
    for (int64_t i = 0; i < dims[d]; ++i) dst[i * s] = *next++;
  } else {
    for (int64_t i = 0; i < dims[d]; ++i) StridedScatter(dims, strides, d + 1, dst + i * strides[d], next);
  }
}

void StridedSliceGradKernel(KernelContext& ctx) {
  const std::vector<int64_t> shape = ReadInts(ctx.input(0));
  for (int64_t d : shape) {
    if (d < 0) ThrowInvalidArgument("StridedSliceGrad: shape has a negative dimension ", d);
  }
  const Dims in_shape(shape.begin(), shape.end());
  const std::vector<int64_t> begin = ReadInts(ctx.input(1)), end = ReadInts(ctx.input(2)),
                             strides = ReadInts(ctx.input(3));
  if (begin.size() != end.size() || begin.size() != strides.size()) {
    ThrowInvalidArgument("StridedSliceGrad: begin, end and strides must have the same length");
  }
  SliceAnalysis a;
  try {
    a = AnalyzeSlice(ctx.op, PartialShape(in_shape), static_cast<int64_t>(begin.size()), ReadMasks(ctx.attrs),
                     &begin, &end, &strides);
  } catch (const StaticError& e) {
    ThrowInvalidArgument(e.what());
  }
  const Tensor& dy = ctx.input(4);
  if (NumElements(a.output.dims) != dy.num_elements() || a.output.dims.size() != dy.shape().size()) {
    ThrowInvalidArgument("StridedSliceGrad: dy has shape ", DimsToString(dy.shape()), " but the slice has shape ",
                         DimsToString(a.output.dims));
  }
  Tensor& out = ctx.allocate_output(0, in_shape);
  VisitNumericBool(dy.dtype(), "StridedSliceGrad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* po = out.data<T>();
    std::fill(po, po + out.num_elements(), T(0));
    if (dy.num_elements() == 0) return;
    const Dims in_strides = RowMajorStrides(in_shape);
    Dims copy_dims(in_shape.size()), copy_strides(in_shape.size());
    int64_t offset = 0;
    for (size_t i = 0; i < in_shape.size(); ++i) {
      offset += a.dims[i].begin * in_strides[i];
      copy_dims[i] = a.dims[i].size;
      copy_strides[i] = a.dims[i].stride * in_strides[i];
    }
    const T* next = dy.data<T>();
    StridedScatter<T>(copy_dims, copy_strides, 0, po + offset, next);
  });
}

OpDef MakeStridedSliceGrad() {
  OpDef op;
  op.name = "StridedSliceGrad";
  op.inputs = {{"shape", false, "Index", kIndexTypes},
               {"begin", false, "Index", kIndexTypes},
               {"end", false, "Index", kIndexTypes},
               {"strides", false, "Index", kIndexTypes},
               {"dy", false, "T", kNumericBoolTypes}};
  op.outputs = {"output"};
  for (const char* mask : {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"}) {
    op.attrs.push_back({mask, AttrType::kInt, AttrValue(int64_t{0})});
  }
  op.dtype_fn = SameDTypeAsInput(4);
  op.shape_fn = [](const InferContext& c) {
    CheckInputRank(c, 0, 1, "shape");
    auto shape = c.IntValues(0);
    if (!shape) {
      const PartialShape& s = c.shapes[0];
      if (s.known_rank && s.dims[0] >= 0) {
        return std::vector<PartialShape>{PartialShape::UnknownOfRank(static_cast<int>(s.dims[0]))};
      }
      return std::vector<PartialShape>{PartialShape::Unknown()};
    }
    CheckOutputRank(c.op, static_cast<int64_t>(shape->size()));
    for (int64_t d : *shape) {
      if (d < 0) ThrowValueError(c.op.name, ": shape has a negative dimension ", d);
    }
    Dims dims(shape->begin(), shape->end());
    CheckedProduct(c.op, dims);
    return std::vector<PartialShape>{PartialShape(dims)};
  };
  op.kernel = StridedSliceGradKernel;
  op.doc = "The gradient of StridedSlice: a tensor of `shape`, zero except where the slice picked elements, "
           "which take the values of dy.";
  return op;
}

OpRegistrar strided_slice_grad_op(WithNarrowTypes(MakeStridedSliceGrad(), kNarrowTypes));

}  // namespace
}  // namespace treadle
