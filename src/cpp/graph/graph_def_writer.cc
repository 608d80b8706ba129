#include "graph/graph_def_writer.h"

#include "graph/attr_proto.h"
#include "graph/graph_version.h"
#include "tensor/tensor_proto.h"
#include "util/errors.h"

namespace treadle::graph {

namespace {

// The version a reader needs: every treadle reads graphs of version 1.
constexpr int kMinConsumer = 1;

std::string OutputName(const std::string& node, int output) {
  return output == 0 ? node : StrCat(node, ":", output);
}

// `input_name` names the value a TensorRef stands for, `node_name` the node
// an index stands for, as NodeDef inputs do.
template <typename InputName, typename NodeName>
void WriteNodeDef(const Node& node, const InputName& input_name, const NodeName& node_name, proto::NodeDef* out) {
  out->set_name(node.name);
  out->set_op(node.op->name);
  for (TensorRef r : node.inputs) out->add_input(input_name(r));
  for (int c : node.control_inputs) out->add_input("^" + node_name(c));
  auto* attrs = out->mutable_attr();
  for (const auto& [name, value] : node.attrs.items()) AttrToProto(value, &(*attrs)[name]);
}

void WriteArg(const TensorSpec& spec, proto::ArgDef* out) {
  out->set_name(spec.name);
  out->set_type(static_cast<proto::DataType>(static_cast<int>(spec.dtype)));
  PartialShapeToProto(spec.shape, out->mutable_shape());
}

void WriteVersions(proto::GraphDef* out) {
  out->mutable_versions()->set_producer(kGraphVersion);
  out->mutable_versions()->set_min_consumer(kMinConsumer);
}

}  // namespace

void WriteFunctionDef(const LibraryFunction& fn, proto::FunctionDef* out) {
  const Body& body = *fn.body;
  auto* sig = out->mutable_signature();
  sig->set_name(fn.signature.name);
  for (const TensorSpec& a : fn.signature.inputs) WriteArg(a, sig->add_input_arg());
  for (const TensorSpec& r : fn.signature.outputs) WriteArg(r, sig->add_output_arg());
  sig->set_is_stateful(fn.signature.is_stateful);
  auto input_name = [&](TensorRef r) {
    return r.is_arg() ? body.args[r.index].name : OutputName(body.nodes[r.index].name, r.output);
  };
  auto node_name = [&](int c) -> const std::string& { return body.nodes[c].name; };
  for (const Node& node : body.nodes) WriteNodeDef(node, input_name, node_name, out->add_node_def());
  for (size_t k = 0; k < body.rets.size(); ++k) (*out->mutable_ret())[body.results[k].name] = input_name(body.rets[k]);
  for (int c : body.control_rets) out->add_control_ret(body.nodes[c].name);
}

void WriteLibraryGraphDef(const std::vector<std::shared_ptr<const LibraryFunction>>& library, proto::GraphDef* out) {
  WriteVersions(out);
  for (const auto& fn : library) WriteFunctionDef(*fn, out->mutable_library()->add_function());
}

void WriteGraphDef(const GraphBuilder& builder, const std::vector<int>& order,
                   const std::vector<std::shared_ptr<const LibraryFunction>>& library, proto::GraphDef* out) {
  auto input_name = [&](TensorRef r) { return OutputName(builder.node(r.index).name, r.output); };
  auto node_name = [&](int c) -> const std::string& { return builder.node(c).name; };
  WriteVersions(out);
  for (int v : order) WriteNodeDef(builder.node(v), input_name, node_name, out->add_node());
  for (const auto& fn : library) WriteFunctionDef(*fn, out->mutable_library()->add_function());
}

}  // namespace treadle::graph
