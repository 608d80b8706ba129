// What the op registry says of ops that call library functions (If, While,
// calls): which node inputs become a function's arguments and whether its
// results are the node's outputs. Gradients read this instead of knowing each
// control-flow op's layout.
#include "py_common.h"

namespace treadle::python {

void RegisterFunctionAttrs(py::module_& m) {
  m.def("op_function_attrs", [](const std::string& name) {
    py::list out;
    for (const FunctionAttrDef& f : OpRegistry::Global().Get(name).function_attrs) {
      out.append(py::make_tuple(f.attr, f.first_input, !f.result_types.empty(), f.loop_body));
    }
    return out;
  }, py::arg("op_name"),
  "For each function attr of op `op_name`: (attr, first_input, returns_outputs, loop_body). The node's "
  "inputs [first_input, ...) are the function's arguments; with returns_outputs its results are the node's "
  "outputs; with loop_body they are also the next values of its arguments. Empty for other ops.");
}

}  // namespace treadle::python
