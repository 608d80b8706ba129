// Shared helpers of the binding layer: converting between Python objects and
// core types. No op logic lives here.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "ops/attr.h"
#include "ops/registry.h"
#include "tensor/tensor.h"

namespace py = pybind11;

namespace treadle::graph {
class Executable;
struct LibraryFunction;
}

namespace treadle::python {

// treadle's own threads (prefetch, interleave and map workers, the
// executor's) and the interpreter's exit. Python ends a thread that takes the
// GIL once the interpreter finalizes, by a forced unwind through our frames,
// and finalization frees what such a thread may still be using. So treadle's
// threads stop entering Python before it begins: an exit hook (registered with
// atexit when _core is imported, so it runs after the program's own exit
// functions registered later) closes the way in, then waits, with the GIL
// released, for the threads inside to come out (StopEnteringPython). Python's
// own threads (those with a thread state: the main thread, threading's) are
// never refused.
//
// A PythonEntry is one stay inside Python of the thread that makes it.
class PythonEntry {
 public:
  PythonEntry();
  ~PythonEntry();
  PythonEntry(const PythonEntry&) = delete;
  PythonEntry& operator=(const PythonEntry&) = delete;
  bool admitted() const { return admitted_; }

 private:
  bool admitted_ = true;
  bool counted_ = false;
};

// The exit hook's work: refuses treadle's threads from now on and waits up to
// wait_s for those inside Python to come out; whether they all did. Call it
// without the GIL.
bool StopEnteringPython(double wait_s);

// The GIL for a call into Python from a thread of treadle's own. Refused once
// the interpreter exits (Error kCancelled). Unlike py::gil_scoped_acquire it
// gives the GIL back at the end of the scope only if the thread still holds
// it: Python ends a thread that runs into the interpreter's finalization
// inside Python code (one that outlasted the exit hook's wait) by a forced
// unwind, after giving the GIL up; releasing it again on the way out would
// clear the interpreter's current thread state under the thread that now
// holds it.
class GilForCall {
 public:
  GilForCall();
  ~GilForCall() {
    if (PyGILState_Check()) PyGILState_Release(state_);
  }
  GilForCall(const GilForCall&) = delete;
  GilForCall& operator=(const GilForCall&) = delete;

 private:
  PythonEntry entry_;  // first: it outlives the GIL's hold
  PyGILState_STATE state_;
};

// The GIL for a destructor that drops Python objects, when it may be taken
// (held() says): always by a thread that holds it already; otherwise not by a
// thread refused at the way in, nor once the interpreter finalizes. Python
// would end the thread by a forced unwind, which cannot leave a destructor
// (the process would abort). The objects are then left to the dying
// interpreter.
class GilForDrop {
 public:
  GilForDrop();
  ~GilForDrop();
  GilForDrop(const GilForDrop&) = delete;
  GilForDrop& operator=(const GilForDrop&) = delete;
  bool held() const { return held_; }

 private:
  PythonEntry entry_;
  bool held_ = false, taken_ = false;
  PyGILState_STATE state_;
};

// _core.Executable: a planned graph (py_graph.cc); td.data's map stages run it too.
struct PyExecutable {
  std::shared_ptr<const graph::Executable> executable;
};

// _core.LibraryFunction: a finished traced function (py_graph_builder.cc).
struct PyLibraryFunction {
  std::shared_ptr<const graph::LibraryFunction> function;
};
std::vector<std::shared_ptr<const graph::LibraryFunction>> LibraryFromPy(const std::vector<PyLibraryFunction>& fns);

// _core.OpHandle: an op of the registry, looked up once by name (py_ops.cc).
struct OpHandle {
  const OpDef* op;
};

// The Python DType objects (treadle.dtypes.float32, ...), registered by the
// front end at import so that `.dtype` returns them without a lookup.
py::object DTypeObject(DType t);
DType DTypeFromPy(py::handle obj);  // a td.DType, a name string or a NumPy dtype; TypeError otherwise

// A Python bool/int/float/str/bytes as a scalar tensor of dtype `hint`, with
// TensorFlow's rules (no float -> int, range-checked ints). nullopt when `obj`
// is not a Python scalar.
std::optional<Tensor> PyScalarToTensor(py::handle obj, DType hint);

// A NumPy array as a tensor: shares its memory when `copy` is false and the
// array is C-contiguous and aligned, copies otherwise.
Tensor TensorFromNumpy(py::array arr, bool copy);
// A read-only NumPy view of a numeric tensor (strings give an object array of bytes).
py::object TensorToNumpy(const Tensor& t);

// Attribute values from Python, typed by the op's AttrDefs.
// _core.PreparedAttrs: an op's attrs converted once, for calls made again and
// again with the same many attrs (a loom's eager runs). AttrsFromPy takes it
// in place of a dict; Python reads it as a mapping (py_loom.cc).
struct PyPreparedAttrs {
  const OpDef* op;
  AttrMap attrs;
};
AttrMap AttrsFromPy(const OpDef& op, py::handle dict);
py::object AttrToPy(const AttrValue& v);
PartialShape PartialShapeFromPy(py::handle obj);  // None, or a sequence of int/None
py::object PartialShapeToPy(const PartialShape& s);

// Replaces a Python callable the front end sets (under the GIL); None unsets
// it. Handles, not py::objects: a static py::object would be released after
// the interpreter has finalized.
void SetCallable(py::handle& slot, const py::object& fn);

// Called by binding functions that run kernels: release the GIL for large work.
bool ShouldReleaseGil(const std::vector<Tensor>& inputs);

// Runs an op eagerly on EagerTensors (a TypeError for anything else): attrs
// canonicalized (errors tagged "[Op:Name]"), the kernel run in a cancellation
// scope, the GIL released for large work or long-running ops (OpDef::long_running).
// The one path of eager ops (_core.execute).
py::list ExecuteEager(const OpDef& op, py::handle inputs, py::handle attrs);

void RegisterErrors(py::module_& m);
void RegisterTensor(py::module_& m);
void RegisterOps(py::module_& m);
void RegisterProto(py::module_& m);
void RegisterGraph(py::module_& m);
void RegisterGraphBuilder(py::module_& m);  // called by RegisterGraph, before the Executable class
void RegisterDispatch(py::module_& m);
void RegisterFunctionAttrs(py::module_& m);
void RegisterDLPack(py::module_& m);  // after RegisterTensor: adds EagerTensor methods
void RegisterLoom(py::module_& m);
void RegisterData(py::module_& m);
void RegisterExitHook(py::module_& m);  // py_exit.cc

}  // namespace treadle::python
