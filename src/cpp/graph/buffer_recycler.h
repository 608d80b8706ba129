// Reuse of dead tensors' buffers within one graph run. When a value's last
// reader has run, its buffer (if nothing else holds it) goes into this small
// pool, and the next kernel output that fits takes it instead of allocating:
// a chain of elementwise ops then runs without allocating element storage.
// One recycler lives on the stack of each Executable::Run, so it needs no lock.
#pragma once

#include <memory>

#include "ops/registry.h"

namespace treadle::graph {

class BufferRecycler final : public OutputAllocator {
 public:
  // Takes t's buffer into the pool when t is its only owner, the buffer is
  // treadle's own (not memory borrowed from NumPy or DLPack) and holds plain
  // numbers; leaves t empty either way.
  void Recycle(Tensor& t);
  // The smallest pooled buffer big enough for a `dtype` tensor of `shape`.
  bool Allocate(DType dtype, Dims& shape, Tensor* out) override;

 private:
  static constexpr int kCapacity = 8;
  std::shared_ptr<Buffer> pool_[kCapacity];
  int size_ = 0;
};

}  // namespace treadle::graph
