// The way into Python for treadle's own threads, closed at interpreter exit
// (py_common.h says why), and the GIL helpers that go through it.
#include <atomic>
#include <chrono>
#include <thread>

#include "py_common.h"
#include "util/errors.h"

namespace treadle::python {

namespace {

// How long the exit hook waits for treadle's threads to come out of Python (a
// generator that blocks longer is left to Python's own end of the thread).
constexpr double kExitWaitS = 2.0;

std::atomic<bool> closed{false};
std::atomic<int> inside{0};  // treadle's threads admitted and not yet out

bool InterpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

}  // namespace

// A thread without a Python thread state is one of treadle's own (Python
// makes a state per call, which PyGILState_Release deletes after). Counted
// before the check, so that StopEnteringPython, which closes before it
// counts, either sees this thread inside or is seen by it.
PythonEntry::PythonEntry() {
  if (!Py_IsInitialized() || PyGILState_GetThisThreadState() != nullptr) return;
  inside.fetch_add(1);
  if (closed.load()) {
    inside.fetch_sub(1);
    admitted_ = false;
    return;
  }
  counted_ = true;
}

PythonEntry::~PythonEntry() {
  if (counted_) inside.fetch_sub(1);
}

bool StopEnteringPython(double wait_s) {
  closed.store(true);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (inside.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return inside.load() == 0;
}

GilForCall::GilForCall() {
  if (!entry_.admitted()) {
    throw Error(Code::kCancelled, "the interpreter is exiting: treadle's worker threads no longer run Python code");
  }
  state_ = PyGILState_Ensure();
}

GilForDrop::GilForDrop() {
  if (!Py_IsInitialized()) return;
  if (PyGILState_Check()) {
    held_ = true;
    return;
  }
  if (!entry_.admitted() || InterpreterFinalizing()) return;
  state_ = PyGILState_Ensure();
  held_ = taken_ = true;
}

GilForDrop::~GilForDrop() {
  if (taken_) PyGILState_Release(state_);
}

void RegisterExitHook(py::module_& m) {
  m.def("_stop_entering_python", [] {
    py::gil_scoped_release nogil;
    return StopEnteringPython(kExitWaitS);
  }, "Called at interpreter exit: treadle's threads enter Python no more (those inside get a short while to "
     "leave); whether none is left inside.");
  py::module_::import("atexit").attr("register")(m.attr("_stop_entering_python"));
}

}  // namespace treadle::python
