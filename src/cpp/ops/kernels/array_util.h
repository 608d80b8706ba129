// Helpers shared by the array-op kernels (shape, joining, splitting, gather,
// slicing, generators): type-erased block copies, dimension products and the
// small checks their shape functions have in common.
#pragma once

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ops/op_helpers.h"

namespace treadle {

// Address of element `index` of `t`. DTypeSize(kString) is sizeof(std::string),
// so this is right for string tensors too.
inline char* ElementPtr(const Tensor& t, int64_t index) {
  return static_cast<char*>(t.raw_data()) + index * static_cast<int64_t>(DTypeSize(t.dtype()));
}

// Copies `count` elements of dtype `t` between non-overlapping ranges: one
// memcpy for plain types, element assignment for strings.
inline void CopyElements(DType t, void* dst, const void* src, int64_t count) {
  if (count <= 0) return;
  if (t == DType::kString) {
    std::copy_n(static_cast<const std::string*>(src), count, static_cast<std::string*>(dst));
  } else {
    std::memcpy(dst, src, static_cast<size_t>(count) * DTypeSize(t));
  }
}

// Fills [dst, dst + count * block) with `copies` of the first `block` elements
// already there, doubling the filled region each step so that small blocks
// still move in large memcpys.
void ReplicateBlock(DType t, char* dst, int64_t block, int64_t copies);

// Product of dims[begin, end) of a concrete shape.
int64_t DimProduct(const Dims& dims, int begin, int end);

// A tensor's contents as int64 (int32 or int64 tensors of any rank).
std::vector<int64_t> ReadInts(const Tensor& t);

// The value of scalar (or one-element vector) integer input `i`, or nullopt
// when it is not known. Throws ValueError naming `arg` for other shapes.
std::optional<int64_t> ScalarIntInput(const InferContext& c, int i, const char* arg);

// Throws ValueError when `shape` is known and not of rank `rank`; `what` names the input.
void CheckInputRank(const InferContext& c, int i, int rank, const char* what);

// Throws ValueError when a shape the op would produce has more than kMaxRank dims.
void CheckOutputRank(const OpDef& op, int64_t rank);

// The product of `dims` as a shape the op could allocate (ValueError when it
// overflows the element limit); negative entries are skipped.
int64_t CheckedProduct(const OpDef& op, const Dims& dims);

// The shape of a concrete tensor where a partial one is expected.
inline PartialShape Known(const Tensor& t) { return PartialShape(t.shape()); }

// Concatenation along one axis, type-erased: each of `outer` output rows is the
// inputs' rows (`chunks[i]` elements each) one after another.
void InterleaveCopy(DType t, int64_t outer, const std::vector<const char*>& inputs,
                    const std::vector<int64_t>& chunks, char* out);
// The inverse: splits each of `outer` input rows into consecutive pieces of
// `chunks[i]` elements written to outputs[i].
void DeinterleaveCopy(DType t, int64_t outer, const char* in, const std::vector<char*>& outputs,
                      const std::vector<int64_t>& chunks);

// Writes src[sum_k idx[k] * strides[k]] for every index `idx` of `dims`, in
// row-major order, to dst. Strides are in elements and may be negative
// (reversed slices). Rows of stride 1 move as block copies; otherwise the last
// two dimensions are walked in tiles so that a transpose uses whole cache lines.
void StridedCopy(DType t, const char* src, const Dims& dims, const Dims& strides, char* dst);

// One output per `num` with the dtype of input `i` (Unpack, Split, SplitV).
DTypeFn RepeatedDTypeOfInput(int i, const char* num_attr);

}  // namespace treadle
