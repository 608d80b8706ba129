// Stopping long runs: Ctrl-C and deadlines.
//
// A run started from Python (a graph, an eager op, a loom) is a call scope
// on its thread. Inside one, Check() throws when the process was interrupted
// (SIGINT) since the scope began, or when the thread's deadline has passed.
// The places that can run long call it: each step of a graph, each
// iteration of a While loop, each layer op of a loom. The pool's workers
// check under the state of the thread that handed them the work.
//
// SIGINT is seen through a C handler installed in front of Python's own (it
// counts the signal, then calls Python's, which raises KeyboardInterrupt
// when the call returns). If a program installs its own SIGINT handler
// later, InstallInterruptHook() puts the counter back in front of it; the
// loops that run long call it when they start.
#pragma once

#include <atomic>
#include <cstdint>

namespace treadle::cancel {

// Installs (or re-installs in front of a newer handler) the SIGINT counter.
void InstallInterruptHook();

// Sets this thread's deadline (monotonic nanoseconds, 0: none); returns the previous one.
int64_t SetDeadline(int64_t deadline_ns);
int64_t MonotonicNowNs();

// Throws Error(kCancelled) after an interrupt (or once the state's stop flag
// is raised), Error(kDeadlineExceeded) past the deadline.
void Check();

// What a thread's checks compare against, for handing to the pool's workers
// (ParallelFor): work split over threads stops as the caller's would.
struct State {
  bool active = false;       // inside a CallScope
  uint64_t seen = 0;         // the interrupt count when the outermost scope began
  int64_t deadline_ns = 0;   // 0: none
  // Work on a thread of its own (a td.data pipeline's prefetch or map
  // threads) also stops when its owner raises this flag: the owner is being
  // destroyed and must be able to join the thread, whatever it is running.
  const std::atomic<bool>* stop = nullptr;
};
State Current();

// The calling thread's state itself, for a loop that checks at every step:
// it fetches the thread-local once (in a shared library each access is a
// call) and checks with Check(state). Valid while the thread lives.
const State& ThisThread();

namespace detail {
extern std::atomic<uint64_t> interrupts;  // SIGINTs seen by the hook
}  // namespace detail

// Check() for a state fetched with ThisThread(): the common case (no
// interrupt, no stop flag, no deadline) is a few inline loads.
inline void Check(const State& s) {
  if (s.active && (detail::interrupts.load(std::memory_order_relaxed) != s.seen || s.stop != nullptr ||
                   s.deadline_ns != 0)) {
    Check();
  }
}
// A state for a thread that works for the calling thread's iteration (td.data
// threads): interrupts after this call stop it, the caller's deadline does
// not (a deadline bounds a call, and the thread outlives the call that
// started it), and so does `stop`.
State ForWorker(const std::atomic<bool>* stop);

// Runs the enclosed work under `state`, restoring the thread's own after.
class AdoptScope {
 public:
  explicit AdoptScope(const State& state);
  ~AdoptScope();
  AdoptScope(const AdoptScope&) = delete;
  AdoptScope& operator=(const AdoptScope&) = delete;

 private:
  State saved_;
};

// The scope of a call from Python: interrupts before it began do not count.
class CallScope {
 public:
  CallScope();
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  bool outer_;
  uint64_t seen_;
};

}  // namespace treadle::cancel
