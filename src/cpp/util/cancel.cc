#include "util/cancel.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <mutex>

#include "util/errors.h"

namespace treadle::cancel {

std::atomic<uint64_t> detail::interrupts{0};

namespace {

struct sigaction g_previous;  // the handler ours calls after counting

thread_local State tl_state;

void OnInterrupt(int sig, siginfo_t* info, void* context) {
  detail::interrupts.fetch_add(1, std::memory_order_relaxed);
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler == SIG_DFL) {
    // No one else handles it: die of SIGINT as the process would have.
    signal(sig, SIG_DFL);
    raise(sig);
  } else if (g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  }
}

[[noreturn]] void ThrowInterrupted() {
  tl_state.seen = detail::interrupts.load(std::memory_order_relaxed);
  throw Error(Code::kCancelled, "the run was interrupted (SIGINT)");
}

}  // namespace

void InstallInterruptHook() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) != 0) return;
  const bool ours = (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == OnInterrupt;
  if (ours) return;
  if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) return;  // interrupts are ignored
  struct sigaction mine = {};
  mine.sa_sigaction = OnInterrupt;
  mine.sa_flags = SA_SIGINFO | (current.sa_flags & SA_RESTART);
  sigemptyset(&mine.sa_mask);
  g_previous = current;
  sigaction(SIGINT, &mine, nullptr);
}

int64_t MonotonicNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t SetDeadline(int64_t deadline_ns) {
  const int64_t previous = tl_state.deadline_ns;
  tl_state.deadline_ns = deadline_ns;
  return previous;
}

void Check() {
  const State& s = tl_state;
  if (!s.active) return;
  if (detail::interrupts.load(std::memory_order_relaxed) != s.seen) ThrowInterrupted();
  if (s.stop != nullptr && s.stop->load(std::memory_order_relaxed)) {
    throw Error(Code::kCancelled, "the run was stopped (its iteration ended)");
  }
  if (s.deadline_ns != 0 && MonotonicNowNs() > s.deadline_ns) {
    throw Error(Code::kDeadlineExceeded, "the run passed its deadline (td.experimental.deadline)");
  }
}

State Current() { return tl_state; }

const State& ThisThread() { return tl_state; }

State ForWorker(const std::atomic<bool>* stop) {
  State s;
  s.active = true;
  s.seen = detail::interrupts.load(std::memory_order_relaxed);
  s.stop = stop;
  return s;
}

AdoptScope::AdoptScope(const State& state) : saved_(tl_state) { tl_state = state; }
AdoptScope::~AdoptScope() { tl_state = saved_; }

CallScope::CallScope() : outer_(!tl_state.active), seen_(tl_state.seen) {
  if (outer_) {
    tl_state.active = true;
    tl_state.seen = detail::interrupts.load(std::memory_order_relaxed);
  }
}

CallScope::~CallScope() {
  if (outer_) {
    tl_state.active = false;
    tl_state.seen = seen_;
  }
}

}  // namespace treadle::cancel
