#include "tensor/dtype.h"

#include <memory>

namespace treadle {

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
    case DType::kString: return "string";
    case DType::kResource: return "resource";
    case DType::kVariant: return "variant";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat16: return "float16";
    default: return "invalid";
  }
}

DType DTypeFromName(std::string_view name) {
  for (int i = 1; i < kNumDTypes; ++i) {
    if (IsValidDType(i) && name == DTypeName(static_cast<DType>(i))) return static_cast<DType>(i);
  }
  return DType::kInvalid;
}

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kFloat32: return 4;
    case DType::kFloat64: return 8;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBool: return 1;
    case DType::kString: return sizeof(std::string);
    case DType::kResource:
    case DType::kVariant: return sizeof(std::shared_ptr<void>);
    case DType::kInt8:
    case DType::kUInt8: return 1;
    case DType::kBFloat16:
    case DType::kFloat16: return 2;
    default: return 0;
  }
}

bool IsValidDType(int value) {
  // The enum has gaps (TensorFlow's numbers for the narrow types).
  return value > 0 && value < kNumDTypes && DTypeSize(static_cast<DType>(value)) != 0;
}

}  // namespace treadle
