#include "tensor/buffer.h"

#include <cstdlib>
#include <new>
#include <string>

#include "tensor/handle.h"

namespace treadle {

namespace {
constexpr size_t kAlignment = 64;
constexpr size_t kSmallBuffer = 256;
}

std::shared_ptr<Buffer> Buffer::Allocate(DType dtype, int64_t count) {
  std::shared_ptr<Buffer> b(new Buffer());
  size_t nbytes = static_cast<size_t>(count) * DTypeSize(dtype);
  void* p;
  if (nbytes <= kSmallBuffer) {
    // Small tensors (scalars, 2x2s) are the per-op overhead of eager code and
    // graphs; malloc's 16-byte alignment is plenty for them and far cheaper.
    p = std::malloc(nbytes ? nbytes : 1);
  } else {
    // Large buffers are 64-byte aligned for vector loads; aligned_alloc wants
    // a multiple of the alignment.
    p = std::aligned_alloc(kAlignment, (nbytes + kAlignment - 1) / kAlignment * kAlignment);
  }
  if (!p) throw std::bad_alloc();
  b->data_ = p;
  b->nbytes_ = nbytes;
  b->dtype_ = dtype;
  b->count_ = count;
  if (dtype == DType::kString) {
    auto* s = static_cast<std::string*>(p);
    for (int64_t i = 0; i < count; ++i) new (s + i) std::string();
  } else if (IsHandle(dtype)) {
    auto* h = static_cast<Handle*>(p);
    for (int64_t i = 0; i < count; ++i) new (h + i) Handle();
  }
  return b;
}

std::shared_ptr<Buffer> Buffer::Wrap(void* data, size_t nbytes, std::function<void()> release) {
  std::shared_ptr<Buffer> b(new Buffer());
  b->data_ = data;
  b->nbytes_ = nbytes;
  b->release_ = release ? std::move(release) : [] {};
  return b;
}

Buffer::~Buffer() {
  if (release_) {
    release_();
    return;
  }
  if (dtype_ == DType::kString) {
    auto* s = static_cast<std::string*>(data_);
    for (int64_t i = 0; i < count_; ++i) s[i].~basic_string();
  } else if (IsHandle(dtype_)) {
    auto* h = static_cast<Handle*>(data_);
    for (int64_t i = 0; i < count_; ++i) h[i].~Handle();
  }
  std::free(data_);
}

}  // namespace treadle
