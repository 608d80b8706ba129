// Parallel map and parallel batch: one engine. Worker threads take a unit of
// work from the input (one element for map, a batch's worth for batch) under
// the lock, since stages are not thread-safe, run it unlocked (the map
// function; the stacking), and file the result by its sequence number. The
// consumer takes results in the input's order (deterministic) or as they
// finish. An error is filed at its unit's place and ends the stage there.
#include <exception>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "data/pipeline.h"
#include "data/waiting.h"
#include "util/errors.h"
#include "util/thread_errors.h"

namespace treadle::data {

namespace {

using Unit = std::vector<Element>;
// Fills *unit from the input (called under the stage's lock); false: no more units.
using PullFn = std::function<bool(Stage& input, Unit* unit)>;
using WorkFn = std::function<Element(Unit unit)>;

class ParallelIt : public Stage {
 public:
  ParallelIt(std::shared_ptr<const StageDef> def, std::unique_ptr<Stage> input, PullFn pull, WorkFn work,
             int threads, bool deterministic)
      : def_(std::move(def)), input_(std::move(input)), pull_(std::move(pull)), work_(std::move(work)),
        max_ahead_(2 * static_cast<size_t>(threads)), deterministic_(deterministic) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  }
  ~ParallelIt() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    cancellation_.Stop();
    changed_.notify_all();
    for (std::thread& t : workers_) t.join();
    input_.reset();
  }

  bool Next(Element* out) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (failed_) return false;
    auto ready = [&] {
      return (deterministic_ ? results_.count(next_out_) > 0 : !results_.empty()) ||
             (input_done_ && in_flight_ == 0);
    };
    WaitChecked(lock, changed_, ready);
    auto it = deterministic_ ? results_.find(next_out_) : results_.begin();
    if (it == results_.end()) return false;  // input done, nothing in flight
    Result r = std::move(it->second);
    results_.erase(it);
    ++next_out_;
    changed_.notify_all();
    if (r.error) {
      failed_ = true;
      std::rethrow_exception(r.error);
    }
    *out = std::move(r.element);
    return true;
  }

 private:
  struct Result {
    Element element;
    std::exception_ptr error;
  };

  // Pulls happen under input_mu_ (stages are not thread-safe, and sequence
  // numbers follow the pulls), not under mu_: the consumer's timed waits on
  // mu_ never queue behind a slow input.
  void Work() {
    cancel::AdoptScope scope(cancellation_.state());
    StageThreadScope stage_thread;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        changed_.wait(lock, [&] { return cancelled_ || input_done_ || results_.size() + in_flight_ < max_ahead_; });
        if (cancelled_ || input_done_) return;
        ++in_flight_;  // a place reserved for this unit's result
      }
      Unit unit;
      Result r;
      int64_t seq;
      bool more = false;
      {
        std::lock_guard<std::mutex> lock(input_mu_);
        seq = next_in_++;
        if (!input_ended_) {
          r.error = CaptureWorkError([&] { more = pull_(*input_, &unit); });
          input_ended_ = !more;
        }
      }
      if (more) {
        r.error = CaptureWorkError([&] { r.element = work_(std::move(unit)); });
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        --in_flight_;
        if (more || r.error) results_[seq] = std::move(r);
        if (!more) input_done_ = true;  // results of earlier units may still be in flight
      }
      changed_.notify_all();
      if (!more) return;
    }
  }

  std::shared_ptr<const StageDef> def_;  // owns what pull_ and work_ refer to
  std::unique_ptr<Stage> input_;
  PullFn pull_;
  WorkFn work_;
  size_t max_ahead_;
  bool deterministic_;
  WorkerCancellation cancellation_;
  std::mutex input_mu_;  // guards input_, next_in_, input_ended_
  int64_t next_in_ = 0;
  bool input_ended_ = false;
  std::mutex mu_;  // guards the rest
  std::condition_variable changed_;
  std::map<int64_t, Result> results_;
  int64_t next_out_ = 0;
  size_t in_flight_ = 0;
  bool input_done_ = false, cancelled_ = false, failed_ = false;
  std::vector<std::thread> workers_;
};

void CheckThreads(int threads, const char* what) {
  if (threads < 1) ThrowInvalidArgument(what, ": num_parallel_calls must be positive, got ", threads);
}

class ParallelMapDef : public StageDef {
 public:
  ParallelMapDef(StageDefPtr input, ExecutablePtr fn, std::vector<Tensor> captures, int threads, bool deterministic)
      : input_(std::move(input)), fn_(std::move(fn)), captures_(std::move(captures)), threads_(threads),
        deterministic_(deterministic) {
    CheckThreads(threads, "map");
  }
  std::unique_ptr<Stage> MakeIterator() const override {
    auto pull = [](Stage& input, Unit* unit) {
      unit->resize(1);
      return input.Next(&(*unit)[0]);
    };
    auto work = [this](Unit unit) { return RunFunction(*fn_, std::move(unit[0]), captures_); };
    return std::make_unique<ParallelIt>(shared_from_this(), input_->MakeIterator(), pull, work, threads_,
                                        deterministic_);
  }

 private:
  StageDefPtr input_;
  ExecutablePtr fn_;
  std::vector<Tensor> captures_;
  int threads_;
  bool deterministic_;
};

class ParallelBatchDef : public StageDef {
 public:
  ParallelBatchDef(StageDefPtr input, int64_t size, bool drop, int threads, bool deterministic)
      : input_(std::move(input)), size_(size), drop_(drop), threads_(threads), deterministic_(deterministic) {
    if (size < 1) ThrowInvalidArgument("batch_size must be greater than zero, got ", size);
    CheckThreads(threads, "batch");
  }
  std::unique_ptr<Stage> MakeIterator() const override {
    auto pull = [size = size_, drop = drop_](Stage& input, Unit* unit) {
      Element e;
      FillCheck check;
      while (static_cast<int64_t>(unit->size()) < size && input.Next(&e)) {
        unit->push_back(std::move(e));
        check.Step();
      }
      return !unit->empty() && !(drop && static_cast<int64_t>(unit->size()) < size);
    };
    auto work = [](Unit unit) { return StackElements(unit); };
    return std::make_unique<ParallelIt>(shared_from_this(), input_->MakeIterator(), pull, work, threads_,
                                        deterministic_);
  }

 private:
  StageDefPtr input_;
  int64_t size_;
  bool drop_;
  int threads_;
  bool deterministic_;
};

}  // namespace

StageDefPtr ParallelMap(StageDefPtr input, ExecutablePtr fn, std::vector<Tensor> captures, int threads,
                        bool deterministic) {
  return std::make_shared<ParallelMapDef>(std::move(input), std::move(fn), std::move(captures), threads,
                                          deterministic);
}

StageDefPtr ParallelBatch(StageDefPtr input, int64_t batch_size, bool drop_remainder, int threads,
                          bool deterministic) {
  return std::make_shared<ParallelBatchDef>(std::move(input), batch_size, drop_remainder, threads, deterministic);
}

}  // namespace treadle::data
