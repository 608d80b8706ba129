// StridedCopy: the gather-by-strides loop behind Transpose and StridedSlice.
#include <cstdint>

#include "ops/kernels/array_util.h"

namespace treadle {
namespace {

constexpr int64_t kTile = 32;
constexpr int64_t kShortStride = 4;

// Copies a rows x cols block: dst is dense, src has strides (rs, cs).
template <typename E>
void CopyTile(const E* src, int64_t rows, int64_t cols, int64_t rs, int64_t cs, E* dst) {
  if (cs == 1) {
    for (int64_t r = 0; r < rows; ++r) std::copy_n(src + r * rs, cols, dst + r * cols);
    return;
  }
  // A short stride still reads each cache line for several elements in a row:
  // walking rows in order is best. Long strides (transposes) need tiles.
  if (cs >= -kShortStride && cs <= kShortStride) {
    for (int64_t r = 0; r < rows; ++r) {
      const E* s = src + r * rs;
      E* d = dst + r * cols;
      for (int64_t c = 0; c < cols; ++c) d[c] = s[c * cs];
    }
    return;
  }
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r) {
        const E* s = src + r * rs;
        E* d = dst + r * cols;
        for (int64_t c = c0; c < c1; ++c) d[c] = s[c * cs];
      }
    }
  }
}

// Plain element types are moved as same-sized unsigned integers, so one
// instantiation serves float32 and int32, another float64 and int64.
template <typename E>
void StridedCopyTyped(const char* src_bytes, const Dims& dims, const Dims& strides, char* dst_bytes) {
  const E* src = reinterpret_cast<const E*>(src_bytes);
  E* dst = reinterpret_cast<E*>(dst_bytes);
  const int rank = static_cast<int>(dims.size());
  if (rank == 0) {
    *dst = *src;
    return;
  }
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  const int64_t cols = dims[rank - 1];
  const int64_t cs = strides[rank - 1];
  const int64_t rows = rank >= 2 ? dims[rank - 2] : 1;
  const int64_t rs = rank >= 2 ? strides[rank - 2] : 0;
  const int outer_rank = std::max(rank - 2, 0);
  const int64_t tile_size = rows * cols;
  Dims idx(outer_rank, 0);
  int64_t offset = 0;
  const int64_t outer = DimProduct(dims, 0, outer_rank);
  for (int64_t o = 0; o < outer; ++o) {
    CopyTile(src + offset, rows, cols, rs, cs, dst + o * tile_size);
    for (int d = outer_rank - 1; d >= 0; --d) {
      offset += strides[d];
      if (++idx[d] < dims[d]) break;
      offset -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}

}  // namespace

void StridedCopy(DType t, const char* src, const Dims& dims, const Dims& strides, char* dst) {
  if (t == DType::kString) return StridedCopyTyped<std::string>(src, dims, strides, dst);
  switch (DTypeSize(t)) {
    case 1: return StridedCopyTyped<uint8_t>(src, dims, strides, dst);
    case 4: return StridedCopyTyped<uint32_t>(src, dims, strides, dst);
    case 8: return StridedCopyTyped<uint64_t>(src, dims, strides, dst);
    default: throw Error(Code::kInternal, StrCat("StridedCopy: unsupported dtype ", DTypeName(t)));
  }
}

}  // namespace treadle
