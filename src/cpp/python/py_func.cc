// PyFunc: a graph node that calls back into Python (td.py_function). The
// kernel takes the GIL, hands the inputs to the dispatcher the front end
// registered (token -> the Python callable) and checks what comes back.
// A Python exception propagates unchanged to whoever called Executable.run.
#include "py_common.h"
#include "util/errors.h"

namespace treadle::python {

namespace {

py::object* g_dispatcher = nullptr;  // fn(token, [EagerTensor]) -> [EagerTensor]; never destroyed

std::vector<Tensor> ResultsFromPy(py::handle out, const std::string& token, const std::vector<DType>& tout) {
  if (out.is_none() && tout.empty()) return {};
  if (!py::isinstance<py::list>(out) && !py::isinstance<py::tuple>(out)) {
    ThrowInvalidArgument("PyFunc '", token, "': the Python function returned ", py::repr(out).cast<std::string>(),
                         " where a list of ", tout.size(), " tensors was expected");
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(out);
  if (seq.size() != tout.size()) {
    ThrowInvalidArgument("PyFunc '", token, "': the Python function returned ", seq.size(),
                         " values but Tout lists ", tout.size());
  }
  std::vector<Tensor> results;
  for (size_t k = 0; k < tout.size(); ++k) {
    py::object item = seq[k];
    if (!py::isinstance<Tensor>(item)) {
      ThrowInvalidArgument("PyFunc '", token, "': result ", k, " is ", py::repr(item).cast<std::string>(),
                           ", not a tensor");
    }
    const Tensor& t = item.cast<const Tensor&>();
    if (t.dtype() != tout[k]) {
      ThrowInvalidArgument("PyFunc '", token, "': result ", k, " has dtype ", DTypeName(t.dtype()),
                           " but Tout says ", DTypeName(tout[k]));
    }
    results.push_back(t);
  }
  return results;
}

void PyFuncKernel(KernelContext& ctx) {
  const std::string& token = ctx.attrs.GetString("token");
  const std::vector<DType>& tout = ctx.attrs.GetTypeList("Tout");
  std::vector<Tensor> results;
  {
    GilForCall gil;
    if (!g_dispatcher || g_dispatcher->is_none()) {
      throw Error(Code::kFailedPrecondition, "PyFunc: no Python function dispatcher is registered");
    }
    py::list args(ctx.num_inputs());
    for (int i = 0; i < ctx.num_inputs(); ++i) args[i] = py::cast(ctx.input(i));
    py::object out = (*g_dispatcher)(token, args);  // a Python exception leaves as error_already_set
    results = ResultsFromPy(out, token, tout);
  }
  for (size_t k = 0; k < results.size(); ++k) ctx.set_output(static_cast<int>(k), std::move(results[k]));
}

OpDef PyFuncOp() {
  OpDef op;
  op.name = "PyFunc";
  op.inputs = {{"input", true, "", {}}};
  op.outputs = {"output"};
  op.attrs = {{"token", AttrType::kString, std::nullopt}, {"Tout", AttrType::kTypeList, std::nullopt}};
  op.dtype_fn = [](const InferContext& c) { return c.attrs.GetTypeList("Tout"); };
  op.shape_fn = [](const InferContext& c) {
    return std::vector<PartialShape>(c.attrs.GetTypeList("Tout").size());
  };
  op.kernel = PyFuncKernel;
  op.stateful = true;
  op.doc = "Calls the Python function registered under `token` on the inputs; its results must have dtypes Tout.";
  return op;
}

OpRegistrar py_func_op(PyFuncOp());

}  // namespace

void RegisterPyFuncDispatcher(py::module_& m) {
  m.def("_set_py_func_dispatcher", [](py::object fn) {
    if (!g_dispatcher) g_dispatcher = new py::object(py::none());
    py::object previous = std::move(*g_dispatcher);
    *g_dispatcher = std::move(fn);
    return previous;
  }, "Registers fn(token, [EagerTensor]) -> [EagerTensor], which PyFunc nodes call; returns the previous one.");
}

}  // namespace treadle::python
