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
    default: return "invalid";
  }
}

DType DTypeFromName(std::string_view name) {
  for (int i = 1; i < kNumDTypes; ++i) {
    if (name == DTypeName(static_cast<DType>(i))) return static_cast<DType>(i);
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
    default: return 0;
  }
}

bool IsValidDType(int value) { return value > 0 && value < kNumDTypes; }

}  // namespace treadle
