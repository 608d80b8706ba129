// The element types a tensor can hold. The numbering matches the DataType enum
// of proto/treadle/tensor.proto, so a value crosses the wire unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/errors.h"

namespace treadle {

enum class DType : int {
  kInvalid = 0,
  kFloat32 = 1,
  kFloat64 = 2,
  kInt32 = 3,
  kInt64 = 4,
  kBool = 5,
  kString = 6,
  // Internal: handles to shared objects (variables) and to values that are
  // not arrays (tensor lists). Not NumPy-convertible, never serialized.
  kResource = 7,
  kVariant = 8,
  // Narrow types. bfloat16 and float16 keep TensorFlow's numbers; TensorFlow's
  // numbers for int8 (6) and uint8 (4) are taken here, so they get 9 and 10.
  kInt8 = 9,
  kUInt8 = 10,
  kBFloat16 = 14,
  kFloat16 = 19,
};
// One past the largest DType value (the numbering has gaps: use IsValidDType).
constexpr int kNumDTypes = 20;

const char* DTypeName(DType t);             // "float32", ...
DType DTypeFromName(std::string_view name);  // kInvalid when unknown
size_t DTypeSize(DType t);                   // bytes per element; sizeof(std::string) for strings
bool IsValidDType(int value);                // a value of the enum above other than kInvalid

// The 16-bit floats: stored as their bit patterns, computed in float32.
inline bool IsHalfFloat(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }
// The 8-bit integers: stored as themselves, computed in int32.
inline bool IsByteInt(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }
inline bool IsFloating(DType t) { return t == DType::kFloat32 || t == DType::kFloat64 || IsHalfFloat(t); }
inline bool IsInteger(DType t) { return t == DType::kInt32 || t == DType::kInt64 || IsByteInt(t); }
inline bool IsNumeric(DType t) { return IsFloating(t) || IsInteger(t); }
inline bool IsHandle(DType t) { return t == DType::kResource || t == DType::kVariant; }

template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kUInt8; };
template <> struct DTypeOf<std::string> { static constexpr DType value = DType::kString; };

// Kernels map a runtime dtype to a C++ type with the Visit* helpers of
// ops/dispatch.h.

}  // namespace treadle
