// A dense, row-major, immutable-by-convention tensor: a dtype, a shape and a
// shared buffer. Copying a Tensor copies the handle, never the elements.
#pragma once

#include <memory>
#include <string>

#include "tensor/buffer.h"
#include "tensor/dtype.h"
#include "tensor/shape.h"

namespace treadle {

class Tensor {
 public:
  Tensor() = default;
  // A new tensor with freshly allocated (uninitialised) storage.
  Tensor(DType dtype, Dims shape);
  // A tensor over an existing buffer, which must hold enough elements.
  Tensor(DType dtype, Dims shape, std::shared_ptr<Buffer> buffer);

  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t(DTypeOf<T>::value, {});
    *t.data<T>() = value;
    return t;
  }

  bool defined() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Dims& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t num_elements() const { return num_elements_; }
  size_t nbytes() const { return static_cast<size_t>(num_elements_) * DTypeSize(dtype_); }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

  template <typename T> T* data() const { return static_cast<T*>(buffer_->data()); }
  void* raw_data() const { return buffer_->data(); }

  // Same elements, new shape (element counts must agree).
  Tensor Reshaped(Dims shape) const;
  // A deep copy with its own buffer.
  Tensor Clone() const;
  // Short human-readable summary, used in error messages.
  std::string DebugString() const;

 private:
  DType dtype_ = DType::kInvalid;
  Dims shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<Buffer> buffer_;
};

}  // namespace treadle
