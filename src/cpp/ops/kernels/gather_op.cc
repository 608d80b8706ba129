// GatherV2: slices of `params` along `axis` picked by `indices`, with
// TensorFlow's batch_dims. Every index is checked before anything is copied;
// each picked slice is one contiguous block (a memcpy, or one element move).
#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"

namespace treadle {
namespace {

PartialShape GatherShape(const InferContext& c) {
  const PartialShape& params = c.shapes[0];
  const PartialShape& indices = c.shapes[1];
  auto axis = ScalarIntInput(c, 2, "axis");
  int64_t batch_dims = c.attrs.GetInt("batch_dims");
  if (!indices.known_rank) return PartialShape::Unknown();
  const int64_t ir = indices.rank();
  if (batch_dims < -ir || batch_dims > ir) {
    ThrowValueError(c.op.name, ": expected batch_dims in the range [", -ir, ", ", ir, "], but got ", batch_dims);
  }
  if (batch_dims < 0) batch_dims += ir;
  if (!params.known_rank) return PartialShape::Unknown();
  const int64_t pr = params.rank();
  if (pr == 0) ThrowValueError(c.op.name, ": params must be at least 1 dimensional, got a scalar");
  if (batch_dims >= pr) {
    ThrowValueError(c.op.name, ": batch_dims (", batch_dims, ") must be less than rank(params) (", pr, ").");
  }
  const int64_t out_rank = pr + ir - 1 - batch_dims;
  CheckOutputRank(c.op, out_rank);
  if (!axis) return PartialShape::UnknownOfRank(static_cast<int>(out_rank));
  if (*axis < -pr || *axis >= pr) {
    ThrowValueError(c.op.name, ": expected axis in the range [", -pr, ", ", pr, "), but got ", *axis);
  }
  const int64_t a = *axis < 0 ? *axis + pr : *axis;
  if (a < batch_dims) {
    ThrowValueError(c.op.name, ": batch_dims (", batch_dims, ") must be less than or equal to axis (", a, ").");
  }
  Dims out;
  for (int64_t i = 0; i < a; ++i) {
    int64_t d = params.dims[i];
    if (i < batch_dims) {
      const int64_t e = indices.dims[i];
      if (d >= 0 && e >= 0 && d != e) {
        ThrowValueError(c.op.name, ": params.shape[", i, "]: ", d, " should be equal to indices.shape[", i, "]: ", e);
      }
      if (d < 0) d = e;
    }
    out.push_back(d);
  }
  out.insert(out.end(), indices.dims.begin() + batch_dims, indices.dims.end());
  out.insert(out.end(), params.dims.begin() + a + 1, params.dims.end());
  CheckedProduct(c.op, out);
  return PartialShape(out);
}

// "1,2" for flat position `flat` of a tensor of shape `dims`.
std::string IndexString(const Dims& dims, int64_t flat) {
  Dims coords(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    coords[d] = flat % dims[d];
    flat /= dims[d];
  }
  std::string s;
  for (size_t d = 0; d < coords.size(); ++d) s += (d ? "," : "") + std::to_string(coords[d]);
  return s;
}

template <typename Index>
void CheckIndices(const OpDef& op, const Tensor& indices, int64_t limit) {
  const Index* ix = indices.data<Index>();
  for (int64_t i = 0; i < indices.num_elements(); ++i) {
    if (ix[i] < 0 || ix[i] >= limit) {
      const std::string where = indices.rank() ? "[" + IndexString(indices.shape(), i) + "]" : "";
      ThrowInvalidArgument("indices", where, " = ", ix[i], " is not in [0, ", limit, ")");
    }
  }
}

// The layout of one gather: out[b, o, j, :] = params[b, o, indices[b, j], :].
struct GatherLayout {
  int64_t batch, outer, axis_dim, inner, per_batch;
};

// Moves single elements (inner == 1) as same-sized integers.
template <typename E, typename Index>
void GatherElements(const GatherLayout& g, const E* params, const Index* ix, E* out) {
  for (int64_t b = 0; b < g.batch; ++b) {
    const Index* bix = ix + b * g.per_batch;
    for (int64_t o = 0; o < g.outer; ++o) {
      const E* src = params + (b * g.outer + o) * g.axis_dim;
      for (int64_t j = 0; j < g.per_batch; ++j) *out++ = src[bix[j]];
    }
  }
}

template <typename Index>
void GatherBlocks(DType t, const GatherLayout& g, const char* params, const Index* ix, char* out) {
  const int64_t row_bytes = g.inner * static_cast<int64_t>(DTypeSize(t));
  for (int64_t b = 0; b < g.batch; ++b) {
    const Index* bix = ix + b * g.per_batch;
    for (int64_t o = 0; o < g.outer; ++o) {
      const char* src = params + (b * g.outer + o) * g.axis_dim * row_bytes;
      for (int64_t j = 0; j < g.per_batch; ++j) {
        CopyElements(t, out, src + bix[j] * row_bytes, g.inner);
        out += row_bytes;
      }
    }
  }
}

void GatherKernel(KernelContext& ctx) {
  const Tensor& params = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  int64_t batch_dims = ctx.attrs.GetInt("batch_dims");
  if (batch_dims < 0) batch_dims += indices.rank();
  int64_t axis = ReadInts(ctx.input(2))[0];
  if (axis < 0) axis += params.rank();
  const int bd = static_cast<int>(batch_dims), a = static_cast<int>(axis);
  GatherLayout g;
  g.batch = DimProduct(params.shape(), 0, bd);
  g.outer = DimProduct(params.shape(), bd, a);
  g.axis_dim = params.dim(a);
  g.inner = DimProduct(params.shape(), a + 1, params.rank());
  g.per_batch = DimProduct(indices.shape(), bd, indices.rank());
  Tensor& out = ctx.allocate_output(0);
  VisitInt(indices.dtype(), "GatherV2", [&](auto tag) {
    using Index = typename decltype(tag)::type;
    CheckIndices<Index>(ctx.op, indices, g.axis_dim);
    if (out.num_elements() == 0) return;
    const Index* ix = indices.data<Index>();
    const char* src = static_cast<const char*>(params.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    const DType t = params.dtype();
    if (g.inner != 1 || t == DType::kString) return GatherBlocks(t, g, src, ix, dst);
    switch (DTypeSize(t)) {
      case 1: return GatherElements(g, reinterpret_cast<const uint8_t*>(src), ix, reinterpret_cast<uint8_t*>(dst));
      case 4: return GatherElements(g, reinterpret_cast<const uint32_t*>(src), ix, reinterpret_cast<uint32_t*>(dst));
      default: return GatherElements(g, reinterpret_cast<const uint64_t*>(src), ix, reinterpret_cast<uint64_t*>(dst));
    }
  });
}

OpDef MakeGather() {
  OpDef op;
  op.name = "GatherV2";
  op.inputs = {{"params", false, "Tparams", kAllTypes},
               {"indices", false, "Tindices", kIndexTypes},
               {"axis", false, "Taxis", kIndexTypes}};
  op.outputs = {"output"};
  op.attrs = {{"batch_dims", AttrType::kInt, AttrValue(int64_t{0})}};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{GatherShape(c)}; };
  op.kernel = GatherKernel;
  op.doc = "Gathers slices of `params` along `axis` at `indices` (with `batch_dims` leading batch dimensions).";
  return op;
}

OpRegistrar gather_op(WithNarrowTypes(MakeGather(), kNarrowTypes));

}  // namespace
}  // namespace treadle
