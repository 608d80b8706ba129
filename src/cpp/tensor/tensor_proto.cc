#include "tensor/tensor_proto.h"

#include <cstring>

#include "util/errors.h"

namespace treadle {

DType DTypeFromProtoEnum(int value, const std::string& where) {
  if (!IsValidDType(value)) ThrowInvalidArgument(where, ": invalid dtype enum value ", value);
  return static_cast<DType>(value);
}

void PartialShapeToProto(const PartialShape& s, proto::TensorShapeProto* proto) {
  proto->Clear();
  if (!s.known_rank) {
    proto->set_unknown_rank(true);
    return;
  }
  for (int64_t d : s.dims) proto->add_dim()->set_size(d);
}

PartialShape PartialShapeFromProto(const proto::TensorShapeProto& proto, const std::string& where) {
  if (proto.unknown_rank()) {
    if (proto.dim_size() != 0) ThrowInvalidArgument(where, ": a shape of unknown rank lists dimensions");
    return PartialShape::Unknown();
  }
  if (proto.dim_size() > kMaxRank) ThrowInvalidArgument(where, ": shape rank ", proto.dim_size(), " exceeds 64");
  Dims dims;
  dims.reserve(proto.dim_size());
  for (const auto& d : proto.dim()) {
    if (d.size() < -1) ThrowInvalidArgument(where, ": shape dimension ", d.size(), " is invalid");
    dims.push_back(d.size());
  }
  return PartialShape(std::move(dims));
}

void TensorToProto(const Tensor& t, proto::TensorProto* proto) {
  if (IsHandle(t.dtype())) {
    ThrowInvalidArgument("a ", DTypeName(t.dtype()), " tensor refers to live objects and cannot be serialized");
  }
  proto->Clear();
  proto->set_dtype(static_cast<proto::DataType>(static_cast<int>(t.dtype())));
  PartialShapeToProto(PartialShape(t.shape()), proto->mutable_shape());
  if (t.dtype() == DType::kString) {
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.num_elements(); ++i) proto->add_string_val(s[i]);
  } else {
    proto->set_tensor_content(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
  }
}

Tensor TensorFromProto(const proto::TensorProto& proto, const std::string& where) {
  DType dtype = DTypeFromProtoEnum(proto.dtype(), where);
  if (IsHandle(dtype)) ThrowInvalidArgument(where, ": a ", DTypeName(dtype), " tensor cannot be read from bytes");
  PartialShape shape = PartialShapeFromProto(proto.shape(), where);
  if (!shape.fully_defined()) {
    ThrowInvalidArgument(where, ": a tensor value needs a fully defined shape, got ", shape.ToString());
  }
  int64_t n = NumElements(shape.dims);
  if (dtype == DType::kString) {
    if (!proto.tensor_content().empty()) {
      ThrowInvalidArgument(where, ": string tensor of shape ", DimsToString(shape.dims), " has ",
                           proto.tensor_content().size(), " bytes of tensor_content; a string tensor's values "
                           "are its string_val entries, and its tensor_content must be empty");
    }
    if (proto.string_val_size() != n) {
      ThrowInvalidArgument(where, ": string tensor of shape ", DimsToString(shape.dims), " needs ", n,
                           " string_val entries, got ", proto.string_val_size());
    }
    Tensor t(dtype, shape.dims);
    std::string* dst = t.data<std::string>();
    for (int64_t i = 0; i < n; ++i) dst[i] = proto.string_val(static_cast<int>(i));
    return t;
  }
  size_t expected = static_cast<size_t>(n) * DTypeSize(dtype);
  if (proto.string_val_size() != 0) {
    ThrowInvalidArgument(where, ": ", DTypeName(dtype), " tensor of shape ", DimsToString(shape.dims), " has ",
                         proto.string_val_size(), " string_val entries; only a string tensor may have any (its "
                         "values are its tensor_content bytes)");
  }
  if (proto.tensor_content().size() != expected) {
    ThrowInvalidArgument(where, ": ", DTypeName(dtype), " tensor of shape ", DimsToString(shape.dims), " needs ",
                         expected, " bytes of content, got ", proto.tensor_content().size());
  }
  Tensor t(dtype, shape.dims);
  if (expected) std::memcpy(t.raw_data(), proto.tensor_content().data(), expected);
  if (dtype == DType::kBool) {
    // Any byte other than 0/1 would be an invalid C++ bool.
    auto* b = static_cast<unsigned char*>(t.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      if (b[i] > 1) ThrowInvalidArgument(where, ": bool tensor element ", i, " has byte value ", int(b[i]));
    }
  }
  return t;
}

}  // namespace treadle
