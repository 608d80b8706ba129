// Graph execution as Python sees it: _core.Executable, built from traced
// functions or from a serialized GraphDef, and run on EagerTensors with the
// GIL released.
#include "graph/elementwise_fusion.h"
#include "graph/graph_version.h"
#include "graph/library.h"
#include "graph/loader.h"
#include "py_common.h"
#include "util/cancel.h"
#include "util/errors.h"

namespace treadle::python {

void RegisterPyFuncDispatcher(py::module_& m);  // py_func.cc

namespace {

graph::LoadedGraph Load(const py::bytes& data) {
  std::string_view view(data);
  py::gil_scoped_release nogil;  // the bytes object stays alive and immutable meanwhile
  return graph::LoadGraphDef(view.data(), view.size());
}

std::vector<Tensor> ArgsFromPy(py::handle seq) {
  if (!py::isinstance<py::list>(seq) && !py::isinstance<py::tuple>(seq)) {
    throw py::type_error("Executable.run expects a list of EagerTensors, got " + py::repr(seq).cast<std::string>());
  }
  std::vector<Tensor> args;
  args.reserve(py::len(seq));
  size_t i = 0;
  for (py::handle item : seq) {
    if (!py::isinstance<Tensor>(item)) {
      throw py::type_error("Executable.run: argument " + std::to_string(i) + " is " +
                           py::repr(item).cast<std::string>() + ", not an EagerTensor");
    }
    args.push_back(item.cast<const Tensor&>());
    ++i;
  }
  return args;
}

py::list Run(const PyExecutable& self, py::handle args_obj) {
  std::vector<Tensor> args = ArgsFromPy(args_obj);
  std::vector<Tensor> results;
  cancel::CallScope scope;
  {
    py::gil_scoped_release nogil;  // PyFunc kernels take it back while they call Python
    results = self.executable->Run(args);
  }
  py::list out(results.size());
  for (size_t i = 0; i < results.size(); ++i) out[i] = py::cast(std::move(results[i]));
  return out;
}

py::list SignatureToPy(const std::vector<graph::TensorSpec>& specs) {
  py::list out;
  for (const auto& s : specs) out.append(py::make_tuple(DTypeObject(s.dtype), PartialShapeToPy(s.shape)));
  return out;
}

}  // namespace

void RegisterGraph(py::module_& m) {
  m.attr("GRAPH_VERSION") = graph::kGraphVersion;
  RegisterGraphBuilder(m);
  py::class_<PyExecutable>(m, "Executable", "A validated, planned graph that runs on EagerTensors.")
      .def(py::init([](const py::bytes& graph_def, const std::vector<std::string>& inputs,
                       const std::vector<std::string>& outputs) {
             graph::LoadedGraph g = Load(graph_def);
             return PyExecutable{graph::MakeGraphExecutable(g, inputs, outputs)};
           }),
           py::arg("graph_def"), py::arg("inputs"), py::arg("outputs"),
           "Loads a serialized GraphDef; `inputs` name Placeholder nodes in argument order, `outputs` are "
           "\"node\" or \"node:k\".")
      .def_static("from_function", [](const py::bytes& graph_def, const std::string& function_name) {
             graph::LoadedGraph g = Load(graph_def);
             return PyExecutable{graph::MakeFunctionExecutable(g, function_name)};
           },
           py::arg("graph_def"), py::arg("function_name"),
           "Runs library function `function_name` of a serialized GraphDef, taking its signature's arguments.")
      .def_static("from_library",
                  [](const std::vector<PyLibraryFunction>& functions, const std::string& function_name) {
                    std::shared_ptr<const graph::FunctionLibrary> library =
                        graph::FunctionLibrary::Build(LibraryFromPy(functions));
                    int f = library->Find(function_name);
                    if (f < 0) {
                      throw Error(Code::kNotFound, StrCat("the library has no function '", function_name, "'"));
                    }
                    // Shares ownership of the library, which owns the function's Executable.
                    return PyExecutable{std::shared_ptr<const graph::Executable>(library, &library->Compiled(f))};
                  },
                  py::arg("functions"), py::arg("function_name"),
                  "Runs `function_name` of a library of traced functions (LibraryFunctions), with no serialization.")
      .def("run", &Run, py::arg("args"), "Runs the graph on a list of EagerTensors; returns a list.")
      .def("__call__", &Run, py::arg("args"))
      .def_property_readonly("num_nodes", [](const PyExecutable& e) { return e.executable->num_planned_nodes(); },
                             "How many nodes run per call (after pruning; constants are folded).")
      .def_property_readonly("input_signature",
                             [](const PyExecutable& e) { return SignatureToPy(e.executable->input_specs()); })
      .def_property_readonly("output_signature",
                             [](const PyExecutable& e) { return SignatureToPy(e.executable->output_specs()); })
      .def("__repr__", [](const PyExecutable& e) {
        return StrCat("<Executable ", e.executable->body().Describe(), ": ", e.executable->input_specs().size(),
                      " inputs, ", e.executable->output_specs().size(), " outputs, ",
                      e.executable->num_planned_nodes(), " nodes>");
      });
  m.def("set_elementwise_fusion", &graph::SetElementwiseFusion, py::arg("on"),
        "Whether graphs planned from now on fuse chains of float32 elementwise ops (on by default; "
        "TREADLE_ELEMENTWISE_FUSION=0 turns it off at import).");
  m.def("elementwise_fusion_enabled", &graph::ElementwiseFusionEnabled);
  RegisterPyFuncDispatcher(m);
}

}  // namespace treadle::python
