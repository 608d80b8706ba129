// Runtime dtype -> compile-time type dispatch for kernels: each Visit* calls
// fn(Tag<T>{}) for the C++ type T of `dtype`, within one family of dtypes.
#pragma once

#include <string>

#include "tensor/dtype.h"
#include "util/errors.h"

namespace treadle {

template <typename T> struct Tag { using type = T; };

[[noreturn]] inline void ThrowUnsupported(const char* where, DType t) {
  ThrowTypeError(where, " does not support dtype ", DTypeName(t));
}

template <typename Fn> void VisitFloat(DType t, const char* where, Fn&& fn) {
  switch (t) {
    case DType::kFloat32: return fn(Tag<float>{});
    case DType::kFloat64: return fn(Tag<double>{});
    default: ThrowUnsupported(where, t);
  }
}
template <typename Fn> void VisitInt(DType t, const char* where, Fn&& fn) {
  switch (t) {
    case DType::kInt32: return fn(Tag<int32_t>{});
    case DType::kInt64: return fn(Tag<int64_t>{});
    default: ThrowUnsupported(where, t);
  }
}
template <typename Fn> void VisitNumeric(DType t, const char* where, Fn&& fn) {
  switch (t) {
    case DType::kFloat32: return fn(Tag<float>{});
    case DType::kFloat64: return fn(Tag<double>{});
    case DType::kInt32: return fn(Tag<int32_t>{});
    case DType::kInt64: return fn(Tag<int64_t>{});
    default: ThrowUnsupported(where, t);
  }
}
template <typename Fn> void VisitNumericBool(DType t, const char* where, Fn&& fn) {
  if (t == DType::kBool) return fn(Tag<bool>{});
  VisitNumeric(t, where, fn);
}
template <typename Fn> void VisitAll(DType t, const char* where, Fn&& fn) {
  if (t == DType::kString) return fn(Tag<std::string>{});
  VisitNumericBool(t, where, fn);
}

}  // namespace treadle
