// How td.data's threads wait. A consumer (the thread asking a stage for its
// next element) waits in short slices and checks for Ctrl-C and its deadline
// between them (util/cancel.h), so an interrupted iteration returns promptly
// whatever its producers are doing. The threads a stage starts run under a
// worker state (cancel::ForWorker) whose stop flag the stage raises before
// joining them, so a map function that never ends cannot hang the join.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "util/cancel.h"

namespace treadle::data {

// Waits until ready() holds; throws what cancel::Check throws meanwhile.
template <typename Ready>
void WaitChecked(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Ready ready) {
  cancel::Check();
  while (!cv.wait_for(lock, std::chrono::milliseconds(5), ready)) cancel::Check();
}

// The one check of the loops that pull many input elements before they hand
// out one (shuffle filling its buffer, batch, skip, filter, ...): without
// it such a loop would notice Ctrl-C or a deadline only when it returns,
// seconds later for a large buffer. One per call of a stage's Next, on the
// thread that runs it; Step() once per element pulled.
class FillCheck {
 public:
  FillCheck() : state_(cancel::ThisThread()) {}
  void Step() { cancel::Check(state_); }

 private:
  const cancel::State& state_;
};

// Whether this thread is one a stage started (prefetch, interleave and
// parallel workers). Such a thread may run Python code, and Python may then
// free any object, even the iterator that owns this very thread (a cycle
// through a traceback, say): that iterator must then not be destroyed here,
// where joining its threads would join this one. (py_data.cc hands it to a
// thread of its own.)
inline thread_local bool on_stage_thread = false;
struct StageThreadScope {
  StageThreadScope() { on_stage_thread = true; }
  ~StageThreadScope() { on_stage_thread = false; }
};

// The cancellation state of a stage's own threads: interrupts after the
// stage started, and the stage's stop flag (raised by Stop(), before the join).
class WorkerCancellation {
 public:
  WorkerCancellation() : state_(cancel::ForWorker(&stop_)) {}
  const cancel::State& state() const { return state_; }
  void Stop() { stop_.store(true); }

 private:
  std::atomic<bool> stop_{false};
  cancel::State state_;
};

}  // namespace treadle::data
