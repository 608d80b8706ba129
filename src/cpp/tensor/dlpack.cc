#include "tensor/dlpack.h"

#include <string>

#include "util/errors.h"

namespace treadle {

namespace {

// What an exported managed tensor owns: a handle on the tensor (so the buffer
// outlives every treadle reference) and the shape/stride arrays it points to.
struct ExportContext {
  Tensor tensor;
  Dims shape;
  Dims strides;
};

DLTensor DescribeForExport(ExportContext* ctx) {
  DLTensor dl{};
  dl.data = ctx->tensor.raw_data();
  dl.device = DLDevice{kDLCPU, 0};
  dl.ndim = ctx->tensor.rank();
  dl.dtype = ToDLDataType(ctx->tensor.dtype());
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  return dl;
}

ExportContext* NewExportContext(const Tensor& t) {
  ToDLDataType(t.dtype());  // rejects strings before anything is allocated
  auto* ctx = new ExportContext{t, t.shape(), RowMajorStrides(t.shape())};
  // Shape arrays of scalars are empty; hand out a valid pointer anyway.
  ctx->shape.reserve(1);
  ctx->strides.reserve(1);
  return ctx;
}

std::string DescribeDLDataType(const DLDataType& t) {
  std::string base;
  switch (t.code) {
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    case kDLComplex: base = "complex"; break;
    case kDLBool: base = "bool"; break;
    case kDLOpaqueHandle: base = "opaque"; break;
    default: base = StrCat("code", int(t.code), "_"); break;
  }
  std::string s = StrCat(base, int(t.bits));
  if (t.lanes != 1) s += StrCat("x", t.lanes);
  return s;
}

DType FromDLDataType(const DLDataType& t) {
  if (t.lanes == 1) {
    if (t.code == kDLFloat && t.bits == 32) return DType::kFloat32;
    if (t.code == kDLFloat && t.bits == 64) return DType::kFloat64;
    if (t.code == kDLInt && t.bits == 32) return DType::kInt32;
    if (t.code == kDLInt && t.bits == 64) return DType::kInt64;
    if (t.code == kDLBool && t.bits == 8) return DType::kBool;
    if (t.code == kDLFloat && t.bits == 16) return DType::kFloat16;
    if (t.code == kDLBfloat && t.bits == 16) return DType::kBFloat16;
    if (t.code == kDLInt && t.bits == 8) return DType::kInt8;
    if (t.code == kDLUInt && t.bits == 8) return DType::kUInt8;
  }
  ThrowInvalidArgument("from_dlpack: DLPack dtype ", DescribeDLDataType(t),
                       " is not supported by treadle (supported: float16, bfloat16, float32, float64, int8, uint8, "
                       "int32, int64, bool)");
}

Dims ValidatedShape(const DLTensor& dl) {
  if (dl.ndim < 0 || dl.ndim > kMaxRank) {
    ThrowInvalidArgument("from_dlpack: rank ", dl.ndim, " is outside treadle's range 0..", kMaxRank);
  }
  if (dl.ndim > 0 && dl.shape == nullptr) ThrowInvalidArgument("from_dlpack: the DLPack tensor has no shape array");
  Dims dims(dl.shape, dl.shape + dl.ndim);
  for (int64_t d : dims) {
    if (d < 0) ThrowInvalidArgument("from_dlpack: shape ", DimsToString(dims), " has a negative dimension");
  }
  NumElements(dims);  // throws when the element count overflows
  return dims;
}

// treadle tensors are dense and row-major; strides of size-1 dimensions do
// not matter (producers write anything there).
void CheckRowMajor(const DLTensor& dl, const Dims& dims) {
  if (dl.strides == nullptr) return;
  Dims expected = RowMajorStrides(dims);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != 1 && dl.strides[i] != expected[i]) {
      Dims got(dl.strides, dl.strides + dl.ndim);
      ThrowInvalidArgument("from_dlpack: strides ", DimsToString(got), " (in elements) of a tensor of shape ",
                           DimsToString(dims), " are not C-contiguous (expected ", DimsToString(expected),
                           "); make a contiguous copy first");
    }
  }
}

}  // namespace

DLDataType ToDLDataType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return DLDataType{kDLFloat, 32, 1};
    case DType::kFloat64: return DLDataType{kDLFloat, 64, 1};
    case DType::kInt32: return DLDataType{kDLInt, 32, 1};
    case DType::kInt64: return DLDataType{kDLInt, 64, 1};
    case DType::kBool: return DLDataType{kDLBool, 8, 1};
    case DType::kFloat16: return DLDataType{kDLFloat, 16, 1};
    case DType::kBFloat16: return DLDataType{kDLBfloat, 16, 1};
    case DType::kInt8: return DLDataType{kDLInt, 8, 1};
    case DType::kUInt8: return DLDataType{kDLUInt, 8, 1};
    default:
      ThrowInvalidArgument("to_dlpack: ", DTypeName(dtype), " tensors cannot be exported through DLPack "
                           "(it has no string type)");
  }
}

DLManagedTensor* ExportDLPack(const Tensor& t) {
  ExportContext* ctx = NewExportContext(t);
  auto* managed = new DLManagedTensor{};
  managed->dl_tensor = DescribeForExport(ctx);
  managed->manager_ctx = ctx;
  managed->deleter = [](DLManagedTensor* self) {
    delete static_cast<ExportContext*>(self->manager_ctx);
    delete self;
  };
  return managed;
}

DLManagedTensorVersioned* ExportDLPackVersioned(const Tensor& t, bool copied) {
  ExportContext* ctx = NewExportContext(t);
  auto* managed = new DLManagedTensorVersioned{};
  managed->version = DLPackVersion{kDLPackMajorVersion, kDLPackMinorVersion};
  managed->manager_ctx = ctx;
  managed->deleter = [](DLManagedTensorVersioned* self) {
    delete static_cast<ExportContext*>(self->manager_ctx);
    delete self;
  };
  // A copy belongs to the consumer alone; a shared buffer must stay unchanged.
  managed->flags = copied ? kDLPackFlagIsCopied : kDLPackFlagReadOnly;
  managed->dl_tensor = DescribeForExport(ctx);
  return managed;
}

Tensor ImportDLPack(const DLTensor& dl, std::function<void()> release) {
  if (dl.device.device_type != kDLCPU) {
    ThrowInvalidArgument("from_dlpack: the tensor is on DLPack device type ", dl.device.device_type,
                         " (id ", dl.device.device_id, "); treadle only reads CPU tensors (device type 1)");
  }
  DType dtype = FromDLDataType(dl.dtype);
  Dims dims = ValidatedShape(dl);
  int64_t n = NumElements(dims);
  if (n == 0) {
    // Nothing to share: an own (empty) buffer, and the producer is released now.
    Tensor t(dtype, dims);
    if (release) release();
    return t;
  }
  CheckRowMajor(dl, dims);
  if (dl.data == nullptr) ThrowInvalidArgument("from_dlpack: the DLPack tensor has a null data pointer");
  char* data = static_cast<char*>(dl.data) + dl.byte_offset;
  size_t itemsize = DTypeSize(dtype);
  if (reinterpret_cast<uintptr_t>(data) % itemsize != 0) {
    ThrowInvalidArgument("from_dlpack: the data pointer is not aligned to ", itemsize, " bytes");
  }
  if (dtype == DType::kBool) {
    // A byte other than 0/1 is not a valid C++ bool; reading it is undefined.
    const auto* bytes = reinterpret_cast<const unsigned char*>(data);
    for (int64_t i = 0; i < n; ++i) {
      if (bytes[i] > 1) ThrowInvalidArgument("from_dlpack: bool element ", i, " has byte value ", int(bytes[i]));
    }
  }
  auto buffer = Buffer::Wrap(data, static_cast<size_t>(n) * itemsize, std::move(release));
  return Tensor(dtype, std::move(dims), std::move(buffer));
}

}  // namespace treadle
