// DLPack: the C ABI that array libraries use to share tensors without copying
// (https://dmlc.github.io/dlpack/latest/). The structs below follow the
// published layout (the legacy DLManagedTensor and the versioned 1.x
// DLManagedTensorVersioned); only what treadle needs is declared.
//
// Exporting hands out a managed tensor that keeps the treadle buffer alive
// until the consumer calls its deleter. Importing validates a producer's
// tensor (CPU device, a dtype treadle has, compact row-major strides) before
// wrapping its memory; nothing is copied.
#pragma once

#include <cstdint>
#include <functional>

#include "tensor/tensor.h"

namespace treadle {

extern "C" {

enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
};

struct DLDevice {
  int32_t device_type;  // a DLDeviceType
  int32_t device_id;
};

enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};

struct DLDataType {
  uint8_t code;  // a DLDataTypeCode
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; NULL means compact row-major
  uint64_t byte_offset;
};

// The legacy (pre-1.0) managed tensor, in capsules named "dltensor".
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

constexpr uint64_t kDLPackFlagReadOnly = 1ULL << 0;
constexpr uint64_t kDLPackFlagIsCopied = 1ULL << 1;

// The 1.x managed tensor, in capsules named "dltensor_versioned".
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};

}  // extern "C"

constexpr uint32_t kDLPackMajorVersion = 1;
constexpr uint32_t kDLPackMinorVersion = 0;

// Capsule names fixed by the DLPack Python specification.
constexpr const char* kDLTensorCapsuleName = "dltensor";
constexpr const char* kUsedDLTensorCapsuleName = "used_dltensor";
constexpr const char* kDLTensorVersionedCapsuleName = "dltensor_versioned";
constexpr const char* kUsedDLTensorVersionedCapsuleName = "used_dltensor_versioned";

// The DLPack dtype of a treadle dtype; throws InvalidArgument for strings,
// which have no DLPack representation.
DLDataType ToDLDataType(DType dtype);

// Managed tensors sharing `t`'s memory (marked read-only in the versioned
// form: treadle tensors are immutable). The result owns a reference to the
// buffer until its deleter runs.
DLManagedTensor* ExportDLPack(const Tensor& t);
DLManagedTensorVersioned* ExportDLPackVersioned(const Tensor& t, bool copied);

// A tensor over a producer's memory. Validates the device, dtype, shape and
// strides first and throws InvalidArgument naming the problem; on success
// `release` runs once the tensor's buffer dies (it should call the
// producer's deleter). On failure `release` is not called.
Tensor ImportDLPack(const DLTensor& dl, std::function<void()> release);

}  // namespace treadle
