#include "tensor/tensor.h"

#include <cstring>

#include "tensor/handle.h"

namespace treadle {

Tensor::Tensor(DType dtype, Dims shape)
    : dtype_(dtype), shape_(std::move(shape)), num_elements_(NumElements(shape_)) {
  buffer_ = Buffer::Allocate(dtype_, num_elements_);
}

Tensor::Tensor(DType dtype, Dims shape, std::shared_ptr<Buffer> buffer)
    : dtype_(dtype), shape_(std::move(shape)), num_elements_(NumElements(shape_)), buffer_(std::move(buffer)) {
  if (buffer_->nbytes() < nbytes()) {
    throw Error(Code::kInternal, StrCat("buffer of ", buffer_->nbytes(), " bytes is too small for a ",
                                        DTypeName(dtype_), " tensor of shape ", DimsToString(shape_)));
  }
}

Tensor Tensor::Reshaped(Dims shape) const {
  if (NumElements(shape) != num_elements_) {
    ThrowInvalidArgument("cannot reshape a tensor with ", num_elements_, " elements to shape ",
                         DimsToString(shape));
  }
  return Tensor(dtype_, std::move(shape), buffer_);
}

Tensor Tensor::Clone() const {
  Tensor out(dtype_, shape_);
  if (dtype_ == DType::kString) {
    const std::string* src = data<std::string>();
    std::string* dst = out.data<std::string>();
    for (int64_t i = 0; i < num_elements_; ++i) dst[i] = src[i];
  } else if (IsHandle(dtype_)) {
    const Handle* src = data<Handle>();
    Handle* dst = out.data<Handle>();
    for (int64_t i = 0; i < num_elements_; ++i) dst[i] = src[i];
  } else if (nbytes() > 0) {
    std::memcpy(out.raw_data(), raw_data(), nbytes());
  }
  return out;
}

std::string Tensor::DebugString() const {
  return StrCat("Tensor<", DTypeName(dtype_), ", ", DimsToString(shape_), ">");
}

Tensor MakeHandleTensor(DType dtype, Handle obj) {
  Tensor t(dtype, {});
  *t.data<Handle>() = std::move(obj);
  return t;
}

}  // namespace treadle
