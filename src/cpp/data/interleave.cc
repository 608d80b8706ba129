// Interleave: TensorFlow's cycle, with its slots' elements fetched ahead on
// worker threads.
//
// The order is that of the sequential algorithm (dataset_ops' interleave
// docs): `cycle` slots, `block` elements from each in turn; a slot whose
// iterator ends is left empty for the rest of the lap and refilled from the
// input when the cycle comes back to it. The input is therefore consumed in
// the order the slots are found exhausted, so a slot can be refilled as soon
// as that is found (and its new iterator fetched ahead meanwhile) without
// changing the order. Only the consumer pulls the input and opens slots;
// workers fetch elements of open slots into small per-slot buffers, the
// slots nearest the consumer's position first. With no workers the consumer
// fetches every element itself: one implementation for both.
#include <deque>
#include <exception>
#include <thread>
#include <utility>

#include "data/pipeline.h"
#include "data/waiting.h"
#include "util/errors.h"
#include "util/thread_errors.h"

namespace treadle::data {

namespace {

struct Slot {
  std::unique_ptr<Stage> it;  // null: empty
  std::deque<Element> buffer;
  std::exception_ptr error;   // the iterator's error, raised after the buffered elements
  bool busy = false;          // a thread is in it->Next
  bool ended = false;         // it->Next returned false
};

class InterleaveIt : public Stage {
 public:
  InterleaveIt(std::shared_ptr<const StageDef> def, std::unique_ptr<Stage> input, const DatasetFactory* make,
               int64_t cycle, int64_t block, int threads, bool deterministic)
      : def_(std::move(def)), input_(std::move(input)), make_(make), slots_(static_cast<size_t>(cycle)),
        block_(block), ahead_(std::max<int64_t>(2, block)), deterministic_(deterministic) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  }
  ~InterleaveIt() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    cancellation_.Stop();
    changed_.notify_all();
    for (std::thread& t : workers_) t.join();
    slots_.clear();
    input_.reset();
  }

  bool Next(Element* out) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (failed_) return false;
    try {
      return NextLocked(lock, out);
    } catch (...) {
      failed_ = true;
      throw;
    }
  }

 private:
  bool NextLocked(std::unique_lock<std::mutex>& lock, Element* out) {
    if (!started_) {
      started_ = true;
      for (size_t k = 0; k < slots_.size(); ++k) Open(lock, k);
    }
    for (;;) {
      if (open_ == 0) return false;  // slots stay empty only once the input has ended
      Slot& s = slots_[at_];
      if (!s.it) {
        Advance();
      } else if (!s.buffer.empty()) {
        *out = std::move(s.buffer.front());
        s.buffer.pop_front();
        changed_.notify_all();
        if (++taken_ == block_) Advance();
        return true;
      } else if (s.error) {
        std::rethrow_exception(s.error);
      } else if (s.ended) {
        Close(lock, at_);
        Advance();
        Open(lock, (at_ + slots_.size() - 1) % slots_.size());
      } else if (!s.busy) {
        Fetch(lock, s);  // nothing fetched ahead: fetch it here
      } else if (!deterministic_ && MoveToReadySlot()) {
        continue;
      } else {
        WaitChecked(lock, changed_, [&] { return !s.busy || !s.buffer.empty(); });
      }
    }
  }

  void Advance() {
    taken_ = 0;
    at_ = (at_ + 1) % slots_.size();
  }

  // Not deterministic: the nearest slot that has something to hand out.
  bool MoveToReadySlot() {
    for (size_t d = 1; d < slots_.size(); ++d) {
      const size_t k = (at_ + d) % slots_.size();
      const Slot& s = slots_[k];
      if (s.it && (!s.buffer.empty() || s.error || s.ended)) {
        at_ = k;
        taken_ = 0;
        return true;
      }
    }
    return false;
  }

  // Fills empty slot k from the next input element (nothing when the input has ended).
  void Open(std::unique_lock<std::mutex>& lock, size_t k) {
    if (input_done_) return;
    lock.unlock();  // the input and the factory may take the GIL, and run long
    std::unique_ptr<Stage> it;
    try {
      Element e;
      if (input_->Next(&e)) it = (*make_)(std::move(e))->MakeIterator();
    } catch (...) {
      lock.lock();
      throw;
    }
    lock.lock();
    if (!it) {
      input_done_ = true;
      return;
    }
    slots_[k] = Slot();
    slots_[k].it = std::move(it);
    ++open_;
    changed_.notify_all();
  }

  void Close(std::unique_lock<std::mutex>& lock, size_t k) {
    std::unique_ptr<Stage> it = std::move(slots_[k].it);
    slots_[k] = Slot();
    --open_;
    lock.unlock();  // an iterator's end may join threads or take the GIL
    it.reset();
    lock.lock();
  }

  // One element of slot s into its buffer, fetched unlocked; s is marked busy meanwhile.
  void Fetch(std::unique_lock<std::mutex>& lock, Slot& s) {
    s.busy = true;
    Stage* it = s.it.get();
    lock.unlock();
    Element e;
    bool more = false;
    std::exception_ptr error = CaptureWorkError([&] { more = it->Next(&e); });
    lock.lock();
    s.busy = false;
    if (error) {
      s.error = error;
    } else if (!more) {
      s.ended = true;
    } else {
      s.buffer.push_back(std::move(e));
    }
    changed_.notify_all();
  }

  // The open slot a worker should fetch for: the nearest one at or after the
  // consumer's position with room in its buffer.
  Slot* SlotToFetch() {
    for (size_t d = 0; d < slots_.size(); ++d) {
      Slot& s = slots_[(at_ + d) % slots_.size()];
      if (s.it && !s.busy && !s.ended && !s.error && static_cast<int64_t>(s.buffer.size()) < ahead_) return &s;
    }
    return nullptr;
  }

  void Work() {
    cancel::AdoptScope scope(cancellation_.state());
    StageThreadScope stage_thread;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      Slot* s = nullptr;
      changed_.wait(lock, [&] { return cancelled_ || (s = SlotToFetch()) != nullptr; });
      if (cancelled_) return;
      Fetch(lock, *s);
    }
  }

  std::shared_ptr<const StageDef> def_;  // owns *make_
  std::unique_ptr<Stage> input_;
  const DatasetFactory* make_;
  std::vector<Slot> slots_;
  const int64_t block_, ahead_;
  const bool deterministic_;
  WorkerCancellation cancellation_;
  std::mutex mu_;
  std::condition_variable changed_;
  size_t at_ = 0, open_ = 0;
  int64_t taken_ = 0;
  bool started_ = false, input_done_ = false, failed_ = false, cancelled_ = false;
  std::vector<std::thread> workers_;
};

class InterleaveDef : public StageDef {
 public:
  InterleaveDef(StageDefPtr input, DatasetFactory make, int64_t cycle, int64_t block, int threads,
                bool deterministic)
      : input_(std::move(input)), make_(std::move(make)), cycle_(cycle), block_(block), threads_(threads),
        deterministic_(deterministic) {
    if (cycle < 1 || block < 1) {
      ThrowInvalidArgument("interleave: cycle_length (", cycle, ") and block_length (", block, ") must be positive");
    }
    if (threads < 0) ThrowInvalidArgument("interleave: num_parallel_calls must be positive, got ", threads);
  }
  std::unique_ptr<Stage> MakeIterator() const override {
    return std::make_unique<InterleaveIt>(shared_from_this(), input_->MakeIterator(), &make_, cycle_, block_,
                                          threads_, deterministic_);
  }

 private:
  StageDefPtr input_;
  DatasetFactory make_;
  int64_t cycle_, block_;
  int threads_;
  bool deterministic_;
};

}  // namespace

StageDefPtr Interleave(StageDefPtr input, DatasetFactory make, int64_t cycle_length, int64_t block_length,
                       int threads, bool deterministic) {
  return std::make_shared<InterleaveDef>(std::move(input), std::move(make), cycle_length, block_length, threads,
                                         deterministic);
}

}  // namespace treadle::data
