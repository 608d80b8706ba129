// Tracing as Python sees it: _core.GraphBuilder (the graph a FuncGraph
// builds, held in C++) and _core.LibraryFunction (a finished function, which
// Executables take without any serialization). Glue only: the logic is in
// graph/graph_builder.cc and graph/graph_def_writer.cc.
#include <memory>

#include "graph/graph_builder.h"
#include "graph/graph_def_writer.h"
#include "py_common.h"
#include "util/errors.h"

namespace treadle::python {

namespace {

using graph::GraphBuilder;
using graph::LibraryFunction;
using graph::TensorRef;

// The node outputs a list of symbolic tensors stands for: each tensor's
// `op._node` (its node index) and `value_index`.
std::vector<TensorRef> RefsFromTensors(py::handle tensors) {
  static const py::str op_attr("op"), node_attr("_node"), index_attr("value_index");
  std::vector<TensorRef> refs;
  refs.reserve(py::len(tensors));
  for (py::handle t : tensors) {
    if (!py::hasattr(t, op_attr)) {
      throw py::type_error("a graph node's inputs must be tensors of the graph, got " + py::repr(t).cast<std::string>());
    }
    refs.push_back(TensorRef::Node(t.attr(op_attr).attr(node_attr).cast<int>(), t.attr(index_attr).cast<int>()));
  }
  return refs;
}

py::tuple NodeResult(const GraphBuilder& b, int index) {
  const graph::Node& node = b.node(index);
  py::list dtypes(node.outputs.dtypes.size()), shapes(node.outputs.shapes.size());
  for (size_t k = 0; k < node.outputs.dtypes.size(); ++k) {
    dtypes[k] = DTypeObject(node.outputs.dtypes[k]);
    shapes[k] = PartialShapeToPy(node.outputs.shapes[k]);
  }
  return py::make_tuple(index, node.name, dtypes, shapes);
}

std::string Serialize(const google::protobuf::Message& m) {
  std::string out;
  if (!m.SerializeToString(&out)) throw Error(Code::kInternal, "could not serialize a protobuf message");
  return out;
}

}  // namespace

std::vector<std::shared_ptr<const LibraryFunction>> LibraryFromPy(const std::vector<PyLibraryFunction>& fns) {
  std::vector<std::shared_ptr<const LibraryFunction>> out;
  out.reserve(fns.size());
  for (const PyLibraryFunction& f : fns) out.push_back(f.function);
  return out;
}

void RegisterGraphBuilder(py::module_& m) {
  py::class_<PyLibraryFunction>(m, "LibraryFunction",
                                "A finished traced function, ready for libraries and Executables.")
      .def_property_readonly("name", [](const PyLibraryFunction& f) { return f.function->signature.name; })
      .def("function_def", [](const PyLibraryFunction& f) {
             proto::FunctionDef fd;
             graph::WriteFunctionDef(*f.function, &fd);
             return py::bytes(Serialize(fd));
           },
           "The serialized FunctionDef.");

  m.def("library_graph_def", [](const std::vector<PyLibraryFunction>& library) {
          proto::GraphDef gd;
          graph::WriteLibraryGraphDef(LibraryFromPy(library), &gd);
          return py::bytes(Serialize(gd));
        },
        py::arg("library"), "A serialized GraphDef with no nodes whose library holds `library`.");

  py::class_<GraphBuilder>(m, "GraphBuilder", "The graph a FuncGraph builds: nodes inferred once, as they are added.")
      .def(py::init<>())
      .def("add_node",
           [](GraphBuilder& b, const std::string& name, const OpHandle& h, py::handle inputs, py::handle attrs,
              std::vector<int> control) {
             int index = b.AddNode(name, *h.op, RefsFromTensors(inputs), AttrsFromPy(*h.op, attrs), std::move(control));
             return NodeResult(b, index);
           },
           py::arg("name"), py::arg("op"), py::arg("inputs"), py::arg("attrs"), py::arg("control_inputs"),
           "Adds a node; returns (index, unique name, output dtypes, output shapes).")
      .def("replace_node",
           [](GraphBuilder& b, int index, py::handle inputs, py::handle attrs, std::vector<int> control) {
             const OpDef& op = *b.node(index).op;
             b.ReplaceNode(index, RefsFromTensors(inputs), AttrsFromPy(op, attrs), std::move(control));
             return NodeResult(b, index);
           },
           py::arg("index"), py::arg("inputs"), py::arg("attrs"), py::arg("control_inputs"))
      .def("refine_shape",
           [](GraphBuilder& b, int index, int output, py::handle shape) {
             b.RefineShape(index, output, PartialShapeFromPy(shape));
           },
           py::arg("index"), py::arg("output"), py::arg("shape"))
      .def("attrs",
           [](const GraphBuilder& b, int index) {
             py::dict out;
             for (const auto& [name, value] : b.node(index).attrs.items()) out[py::str(name)] = AttrToPy(value);
             return out;
           },
           py::arg("index"), "The node's canonical attrs, as a dict.")
      .def("find_constant", &GraphBuilder::FindConstant, py::arg("value"),
           "The index of the Const node holding a small numeric value equal to `value`, or -1.")
      .def("share_constant", &GraphBuilder::ShareConstant, py::arg("index"),
           "Makes Const node `index` the one find_constant gives for its value (when small).")
      .def("__len__", &GraphBuilder::size)
      .def("make_function",
           [](const GraphBuilder& b, const std::string& name, const std::vector<int>& order,
              const std::vector<int>& args, py::handle rets, py::handle result_specs, const std::vector<int>& control_rets,
              bool is_stateful) {
             std::vector<graph::TensorSpec> specs;
             for (py::handle spec : result_specs) {
               auto pair = spec.cast<py::tuple>();
               specs.push_back({StrCat("output_", specs.size()), DTypeFromPy(pair[0]), PartialShapeFromPy(pair[1])});
             }
             return PyLibraryFunction{
                 b.MakeFunction(name, order, args, RefsFromTensors(rets), specs, control_rets, is_stateful)};
           },
           py::arg("name"), py::arg("order"), py::arg("args"), py::arg("rets"), py::arg("result_specs"),
           py::arg("control_rets"), py::arg("is_stateful"),
           "A snapshot of the listed nodes as a LibraryFunction: Placeholders `args` become its arguments, the "
           "tensors `rets` its results, declared as `result_specs` ((dtype, shape) pairs).")
      .def("graph_def",
           [](const GraphBuilder& b, const std::vector<int>& order, const std::vector<PyLibraryFunction>& library) {
             proto::GraphDef gd;
             graph::WriteGraphDef(b, order, LibraryFromPy(library), &gd);
             return py::bytes(Serialize(gd));
           },
           py::arg("order"), py::arg("library"), "The serialized GraphDef of the listed nodes with `library`.");
}

}  // namespace treadle::python
