#include "graph/buffer_recycler.h"

namespace treadle::graph {

namespace {

// Strings and handles are objects constructed in place: their buffers are
// never handed to another tensor.
bool HoldsPlainData(DType t) { return t != DType::kString && !IsHandle(t); }

}  // namespace

void BufferRecycler::Recycle(Tensor& t) {
  if (t.defined() && size_ < kCapacity && HoldsPlainData(t.dtype()) && t.buffer().use_count() == 1 &&
      !t.buffer()->is_external()) {
    pool_[size_++] = t.buffer();
  }
  t = Tensor();
}

bool BufferRecycler::Allocate(DType dtype, Dims& shape, Tensor* out) {
  if (size_ == 0 || !HoldsPlainData(dtype)) return false;
  const size_t needed = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
  int best = -1;
  for (int i = 0; i < size_; ++i) {
    const size_t have = pool_[i]->nbytes();
    if (have >= needed && (best < 0 || have < pool_[best]->nbytes())) best = i;
  }
  if (best < 0) return false;
  std::shared_ptr<Buffer> buffer = std::move(pool_[best]);
  pool_[best] = std::move(pool_[--size_]);
  *out = Tensor(dtype, std::move(shape), std::move(buffer));
  return true;
}

}  // namespace treadle::graph
