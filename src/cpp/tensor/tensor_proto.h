// Tensor <-> TensorProto. Parsing validates everything (dtype, shape, content
// size) and throws InvalidArgument/DataLoss naming `where` before any element
// is copied.
#pragma once

#include <string>

#include "tensor/tensor.h"
#include "treadle/tensor.pb.h"

namespace treadle {

void TensorToProto(const Tensor& t, proto::TensorProto* proto);
Tensor TensorFromProto(const proto::TensorProto& proto, const std::string& where);

void PartialShapeToProto(const PartialShape& s, proto::TensorShapeProto* proto);
PartialShape PartialShapeFromProto(const proto::TensorShapeProto& proto, const std::string& where);

DType DTypeFromProtoEnum(int value, const std::string& where);  // throws on an invalid value

}  // namespace treadle
