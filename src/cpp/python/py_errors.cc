// Translates core exceptions to Python: Error codes to td.errors classes
// (registered by the front end), StaticError to TypeError/ValueError.
#include <map>

#include "py_common.h"
#include "util/cancel.h"
#include "util/errors.h"

namespace treadle::python {

namespace {
std::map<int, py::object>& ErrorClasses() {
  static auto* classes = new std::map<int, py::object>();
  return *classes;
}
}  // namespace

void RegisterErrors(py::module_& m) {
  m.def("_set_error_classes", [](py::dict classes) {
    for (auto item : classes) ErrorClasses()[item.first.cast<int>()] = py::reinterpret_borrow<py::object>(item.second);
  });
  // The deadline of runs started from this thread (util/cancel.h).
  m.def("set_deadline", &cancel::SetDeadline, py::arg("deadline_ns"),
        "Sets this thread's deadline (monotonic ns, 0: none); returns the previous one.");
  m.def("monotonic_ns", &cancel::MonotonicNowNs, "The clock deadlines are measured on.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StaticError& e) {
      PyErr_SetString(e.kind() == StaticKind::kType ? PyExc_TypeError : PyExc_ValueError, e.what());
    } catch (const Error& e) {
      // An interrupted run: Python's own SIGINT handler is pending; running
      // it now raises KeyboardInterrupt (or whatever the program's handler
      // raises) in place of the CancelledError.
      if (e.code() == Code::kCancelled && PyErr_CheckSignals() != 0) return;
      auto it = ErrorClasses().find(static_cast<int>(e.code()));
      if (it == ErrorClasses().end()) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
        return;
      }
      // td.errors.OpError(node_def, op, message)
      py::object exc = it->second(py::none(), py::none(), e.what());
      PyErr_SetObject(it->second.ptr(), exc.ptr());
    }
  });
}

}  // namespace treadle::python
