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
