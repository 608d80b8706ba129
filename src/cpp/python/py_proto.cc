// Protobuf messages crossing between Python and C++ as serialized bytes.
#include "py_common.h"
#include "tensor/tensor_proto.h"
#include "util/errors.h"

namespace treadle::python {

void RegisterProto(py::module_& m) {
  m.def("tensor_to_proto_bytes", [](const Tensor& t) {
    proto::TensorProto proto;
    TensorToProto(t, &proto);
    return py::bytes(proto.SerializeAsString());
  }, "Serializes a tensor as a treadle.proto.TensorProto.");
  m.def("tensor_from_proto_bytes", [](py::bytes data) {
    std::string_view view(data);
    proto::TensorProto proto;
    if (!proto.ParseFromArray(view.data(), static_cast<int>(view.size()))) {
      throw Error(Code::kDataLoss, "TensorProto: the bytes are not a valid serialized TensorProto");
    }
    return TensorFromProto(proto, "TensorProto");
  }, "Parses and validates a serialized treadle.proto.TensorProto.");
  m.def("protobuf_version", [] { return GOOGLE_PROTOBUF_VERSION; }, "The libprotobuf version the core was built with.");
}

}  // namespace treadle::python
