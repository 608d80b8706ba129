#include "util/parallel.h"

#include <cblas.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "util/cancel.h"
#include "util/thread_errors.h"


namespace treadle::parallel {
namespace {

// Workers wait for a job: a function, a count, and a shared next index.
// Between jobs they spin briefly (a loom posts one job per layer, tens of
// microseconds apart) before sleeping on the condition variable.
class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { WorkerLoop(); });
  }
  // Workers live as long as the process; the pool is never destroyed (a
  // static destructor joining threads at exit could deadlock).
  int workers() const { return static_cast<int>(threads_.size()); }

  // Returns false without running anything when another job holds the pool.
  bool TryRun(int n, const std::function<void(int)>& fn) {
    // A flag rather than a mutex: a job's function may itself call
    // ParallelFor (it then runs serially) on the thread holding the pool.
    if (busy_.exchange(true, std::memory_order_acquire)) return false;
    struct Release {
      std::atomic<bool>& busy;
      ~Release() { busy.store(false, std::memory_order_release); }
    } release{busy_};
    std::vector<std::exception_ptr> errors(n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      errors_ = &errors;
      count_ = n;
      next_.store(0);
      pending_ = workers();
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    Work();
    {
      std::unique_lock<std::mutex> lock(mu_);
      done_.wait(lock, [this] { return pending_ == 0; });
      fn_ = nullptr;
    }
    for (auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
    return true;
  }

 private:
  void Work() {
    for (int i = next_.fetch_add(1); i < count_; i = next_.fetch_add(1)) {
      (*errors_)[i] = CaptureWorkError([&] { (*fn_)(i); });
    }
  }

  void WorkerLoop() {
    uint64_t seen = 0;
    for (;;) {
      for (int spin = 0; spin < 2000 && generation_.load(std::memory_order_acquire) == seen; ++spin) {
        std::this_thread::yield();
      }
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
        seen = generation_.load();
      }
      Work();
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::atomic<bool> busy_{false};  // one job at a time
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_{0};
  const std::function<void(int)>* fn_ = nullptr;
  std::vector<std::exception_ptr>* errors_ = nullptr;
  int count_ = 0;
  std::atomic<int> next_{0};
  int pending_ = 0;
};

std::once_flag num_threads_once;
int num_threads = 1;

std::mutex pool_mu;
Pool* pool = nullptr;  // made on first use; forgotten in a forked child, whose copy has no threads

void ForgetPoolInChild() { pool = nullptr; }

Pool* GetPool() {
  std::lock_guard<std::mutex> lock(pool_mu);
  if (!pool && NumThreads() > 1) {
    static std::once_flag atfork_once;
    std::call_once(atfork_once, [] { pthread_atfork(nullptr, nullptr, ForgetPoolInChild); });
    pool = new Pool(NumThreads() - 1);
  }
  return pool;
}

}  // namespace

int NumThreads() {
  std::call_once(num_threads_once, [] {
    num_threads = std::max(1, scipy_openblas_get_num_threads());
    scipy_openblas_set_num_threads(1);
  });
  return num_threads;
}

void ParallelFor(int n, const std::function<void(int)>& fn) {
  if (n >= 2) {
    Pool* p = GetPool();
    // The workers check for Ctrl-C and deadlines as the caller would.
    const cancel::State caller = cancel::Current();
    const std::function<void(int)> adopted = [&](int i) {
      cancel::AdoptScope adopt(caller);
      fn(i);
    };
    if (p && p->TryRun(n, caller.active ? adopted : fn)) return;
  }
  for (int i = 0; i < n; ++i) fn(i);
}

int PartsFor(int64_t work, int64_t min_work) { return work < min_work ? 1 : NumThreads(); }

Range Part(int64_t extent, int i, int parts, int64_t align) {
  if (align <= 1) return {extent * i / parts, extent * (i + 1) / parts};
  const int64_t slice = ((extent + parts - 1) / parts + align - 1) / align * align;
  return {std::min(extent, i * slice), std::min(extent, (i + 1) * slice)};
}

}  // namespace treadle::parallel
