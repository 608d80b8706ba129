// Handles: tensors of dtype resource (a mutable object such as a variable,
// shared by reference) or variant (an immutable value such as a tensor list).
// Each element is a shared_ptr<HandleBase>, constructed and destroyed by the
// buffer like strings are.
#pragma once

#include <memory>
#include <string>

#include "tensor/tensor.h"

namespace treadle {

class HandleBase {
 public:
  virtual ~HandleBase() = default;
  virtual std::string TypeName() const = 0;
};
using Handle = std::shared_ptr<HandleBase>;

// A scalar tensor of `dtype` (kResource or kVariant) holding `obj`.
Tensor MakeHandleTensor(DType dtype, Handle obj);

// The object held by scalar handle tensor `t`, checked to be a T; throws
// InvalidArgument naming `where` otherwise.
template <typename T>
std::shared_ptr<T> GetHandle(const Tensor& t, DType dtype, const char* where) {
  if (t.dtype() != dtype || t.num_elements() != 1) {
    ThrowInvalidArgument(where, ": expected a scalar ", DTypeName(dtype), " tensor, got ", t.DebugString());
  }
  const Handle& h = *t.data<Handle>();
  auto typed = std::dynamic_pointer_cast<T>(h);
  if (!typed) {
    ThrowInvalidArgument(where, ": the ", DTypeName(dtype), " tensor holds ", h ? h->TypeName() : "nothing",
                         ", not the expected kind of object");
  }
  return typed;
}

}  // namespace treadle
