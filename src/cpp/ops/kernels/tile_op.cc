// Tile: repeats the input `multiples[i]` times along each dimension i. Each
// dimension's first copy is built once, then replicated with doubling memcpys.
#include "ops/narrow_types.h"
#include "ops/kernels/array_util.h"

namespace treadle {
namespace {

PartialShape TileShape(const InferContext& c) {
  const PartialShape& in = c.shapes[0];
  CheckInputRank(c, 1, 1, "multiples");
  const int64_t static_len = c.shapes[1].known_rank ? c.shapes[1].dims[0] : kUnknownDim;
  if (in.known_rank && static_len >= 0 && static_len != in.rank()) {
    ThrowValueError(c.op.name, ": expected multiples argument to be a vector of length ", in.rank(),
                    " but got length ", static_len);
  }
  auto multiples = c.IntValues(1);
  if (!multiples) {
    if (in.known_rank) return PartialShape::UnknownOfRank(in.rank());
    return static_len >= 0 ? PartialShape::UnknownOfRank(static_cast<int>(static_len)) : PartialShape::Unknown();
  }
  const int64_t rank = static_cast<int64_t>(multiples->size());
  CheckOutputRank(c.op, rank);
  if (in.known_rank && rank != in.rank()) {
    ThrowValueError(c.op.name, ": expected multiples argument to be a vector of length ", in.rank(),
                    " but got length ", rank);
  }
  for (int64_t i = 0; i < rank; ++i) {
    if ((*multiples)[i] < 0) {
      ThrowValueError(c.op.name, ": expected multiples[", i, "] >= 0, but got ", (*multiples)[i]);
    }
  }
  Dims out(rank, kUnknownDim);
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t m = (*multiples)[i];
    const int64_t d = in.known_rank ? in.dims[i] : kUnknownDim;
    if (m == 0 || d == 0) out[i] = 0;
    else if (d > 0) {
      if (d > kMaxElements / m) ThrowValueError(c.op.name, ": tiling dimension ", i, " gives more than 2^40 elements");
      out[i] = d * m;
    }
  }
  CheckedProduct(c.op, out);
  return PartialShape(out);
}

struct TileLayout {
  DType dtype;
  int64_t esize;
  Dims in, multiples, in_strides, out_strides;
};

// Writes the tiling of the input block at dimension d (starting at src) to dst.
void TileDim(const TileLayout& l, size_t d, const char* src, char* dst) {
  const int64_t n = l.in[d];
  if (d + 1 == l.in.size()) {
    CopyElements(l.dtype, dst, src, n);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      TileDim(l, d + 1, src + i * l.in_strides[d] * l.esize, dst + i * l.out_strides[d] * l.esize);
    }
  }
  ReplicateBlock(l.dtype, dst, n * l.out_strides[d], l.multiples[d]);
}

void TileKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.allocate_output(0);
  if (out.num_elements() == 0) return;
  if (in.rank() == 0) {
    CopyElements(in.dtype(), out.raw_data(), in.raw_data(), 1);
    return;
  }
  TileLayout l{in.dtype(), static_cast<int64_t>(DTypeSize(in.dtype())), in.shape(), ReadInts(ctx.input(1)),
               RowMajorStrides(in.shape()), RowMajorStrides(out.shape())};
  TileDim(l, 0, static_cast<const char*>(in.raw_data()), static_cast<char*>(out.raw_data()));
}

OpDef MakeTile() {
  OpDef op;
  op.name = "Tile";
  op.inputs = {{"input", false, "T", kAllTypes}, {"multiples", false, "Tmultiples", kIndexTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) { return std::vector<PartialShape>{TileShape(c)}; };
  op.kernel = TileKernel;
  op.doc = "`input` repeated multiples[i] times along each dimension i.";
  return op;
}

OpRegistrar tile_op(WithNarrowTypes(MakeTile(), kNarrowTypes));

}  // namespace
}  // namespace treadle
