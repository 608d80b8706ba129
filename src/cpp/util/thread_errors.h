// The one rule for what a worker thread does with an exception from the work
// it runs: it keeps it, for the thread that waits for the work to rethrow.
// All but one: the forced unwind with which the C library ends a thread
// (pthread_exit, pthread_cancel). Python ends that way a thread that tries to
// take the GIL while the interpreter finalizes, e.g. a prefetch thread
// running a generator at exit. A forced unwind that is caught and not
// rethrown aborts the process ("FATAL: exception not rethrown"); it is
// rethrown here, and the thread ends.
#pragma once

#include <cxxabi.h>

#include <exception>

namespace treadle {

// Runs work(); returns the exception it threw (null if none).
template <typename Work>
std::exception_ptr CaptureWorkError(Work&& work) {
  try {
    work();
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

}  // namespace treadle
