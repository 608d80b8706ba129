// Transpose: permutes dimensions. The kernel first drops size-1 dimensions and
// merges dimensions that stay adjacent, so most transposes reduce to a 2-D or
// 3-D strided copy (and an identity permutation to no copy at all).
#include <vector>

#include "ops/narrow_types.h"
#include "ops/kernels/array_util.h"

namespace treadle {
namespace {

// Checks that `perm` is a permutation of [0, n).
void CheckPermutation(const OpDef& op, const std::vector<int64_t>& perm) {
  const int64_t n = static_cast<int64_t>(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= n) ThrowValueError(op.name, ": perm value ", p, " is out of range [0 .. ", n, ")");
    if (seen[p]) ThrowValueError(op.name, ": perm value ", p, " is duplicated in perm");
    seen[p] = true;
  }
}

PartialShape TransposeShape(const InferContext& c) {
  const PartialShape& in = c.shapes[0];
  CheckInputRank(c, 1, 1, "perm");
  auto perm = c.IntValues(1);
  if (!perm) {
    int64_t n = c.shapes[1].known_rank ? c.shapes[1].dims[0] : kUnknownDim;
    if (in.known_rank) {
      if (n >= 0 && n != in.rank()) {
        ThrowValueError(c.op.name, ": perm must have ", in.rank(), " elements for a tensor of rank ", in.rank(),
                        ", got ", n);
      }
      return PartialShape::UnknownOfRank(in.rank());
    }
    return n >= 0 ? PartialShape::UnknownOfRank(static_cast<int>(n)) : PartialShape::Unknown();
  }
  if (in.known_rank && static_cast<int64_t>(perm->size()) != in.rank()) {
    ThrowValueError(c.op.name, ": transpose expects a vector of size ", in.rank(),
                    ". But input(1) is a vector of size ", perm->size());
  }
  CheckOutputRank(c.op, static_cast<int64_t>(perm->size()));
  CheckPermutation(c.op, *perm);
  if (!in.known_rank) return PartialShape::UnknownOfRank(static_cast<int>(perm->size()));
  Dims out(perm->size());
  for (size_t i = 0; i < perm->size(); ++i) out[i] = in.dims[(*perm)[i]];
  return PartialShape(out);
}

void TransposeKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> perm = ReadInts(ctx.input(1));
  const Dims& out_shape = ctx.out_shapes[0].dims;
  // Drop size-1 dimensions: they do not move any element.
  const int rank = x.rank();
  std::vector<int> new_index(rank, -1);
  Dims dims;
  for (int i = 0; i < rank; ++i) {
    if (x.dim(i) != 1) {
      new_index[i] = static_cast<int>(dims.size());
      dims.push_back(x.dim(i));
    }
  }
  // Runs of output dimensions that are consecutive input dimensions move together.
  std::vector<std::pair<int, int>> runs;  // first and last input dimension, in output order
  for (int k = 0; k < rank; ++k) {
    const int d = new_index[perm[k]];
    if (d < 0) continue;
    if (!runs.empty() && d == runs.back().second + 1) runs.back().second = d;
    else runs.push_back({d, d});
  }
  if (runs.size() <= 1) {  // the layout does not change
    ctx.set_output(0, x.Reshaped(out_shape));
    return;
  }
  const Dims in_strides = RowMajorStrides(dims);
  Dims copy_dims, copy_strides;
  for (auto [first, last] : runs) {
    copy_dims.push_back(DimProduct(dims, first, last + 1));
    copy_strides.push_back(in_strides[last]);
  }
  Tensor& out = ctx.allocate_output(0);
  if (out.num_elements() == 0) return;
  StridedCopy(x.dtype(), static_cast<const char*>(x.raw_data()), copy_dims, copy_strides,
              static_cast<char*>(out.raw_data()));
}

OpDef MakeTranspose() {
  OpDef op;
  op.name = "Transpose";
  op.inputs = {{"x", false, "T", kAllTypes}, {"perm", false, "Tperm", kIndexTypes}};
  op.outputs = {"y"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{TransposeShape(c)}; };
  op.kernel = TransposeKernel;
  op.doc = "Permutes the dimensions of `x`: output dimension i is input dimension perm[i].";
  return op;
}

OpRegistrar transpose_op(WithNarrowTypes(MakeTranspose(), kNarrowTypes));

}  // namespace
}  // namespace treadle
