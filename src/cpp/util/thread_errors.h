// The one rule for what a worker thread does with an exception from the work
// it runs: it keeps it, for the thread that waits for the work to rethrow.
// All but one: the forced unwind with which the C library ends a thread
// (pthread_exit, pthread_cancel). Python ends that way a thread that tries to
// take the GIL while the interpreter finalizes, e.g. a prefetch thread
// running a generator at exit. A forced unwind that is caught and not
// rethrown aborts the process ("FATAL: exception not rethrown"); it is
// rethrown here, and the thread ends.
//
// It is told apart by having no C++ exception object: std::current_exception
// is empty for it (and for any exception not thrown by C++). It is not caught
// as abi::__forced_unwind&: that handler binds its reference to the null
// object pointer the C++ runtime gives for such an exception, which is
// undefined behaviour (UndefinedBehaviorSanitizer stops the process there).
#pragma once

#include <exception>

namespace treadle {

// Runs work(); returns the exception it threw (null if none).
template <typename Work>
std::exception_ptr CaptureWorkError(Work&& work) {
  try {
    work();
  } catch (...) {
    std::exception_ptr error = std::current_exception();
    if (!error) throw;  // a forced unwind: the thread is ending
    return error;
  }
  return nullptr;
}

}  // namespace treadle
