// Reference-counted storage for tensor elements. A buffer either owns a
// 64-byte-aligned allocation (strings are constructed in place and destroyed
// with it) or wraps memory owned by someone else (a NumPy array, a DLPack
// producer), releasing that owner when the last tensor lets go.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "tensor/dtype.h"

namespace treadle {

class Buffer {
 public:
  // Uninitialised storage for `count` elements (strings are default-constructed).
  static std::shared_ptr<Buffer> Allocate(DType dtype, int64_t count);
  // Memory owned elsewhere; `release` runs when the buffer dies.
  static std::shared_ptr<Buffer> Wrap(void* data, size_t nbytes, std::function<void()> release);

  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  // True when this buffer wraps memory it does not own (it may be read-only).
  bool is_external() const { return static_cast<bool>(release_); }

 private:
  Buffer() = default;
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  DType dtype_ = DType::kInvalid;
  int64_t count_ = 0;
  std::function<void()> release_;
};

}  // namespace treadle
