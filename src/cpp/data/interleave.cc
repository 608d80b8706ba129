// Interleave: TensorFlow's cycle, with its slots' elements fetched ahead on
// worker threads.
//
// The order is that of the sequential algorithm (dataset_ops' interleave
// docs): `cycle` slots, `block` elements from each in turn; an empty slot is
// filled from the next input element when the cycle reaches it, so the first
// lap opens the slots one by one, and a slot whose iterator ends is left
// empty for the rest of the lap. Without workers that is also when the input
// is read, as TensorFlow's interleave reads it: no input element is read, and
// map_func runs on none, before the cycle needs it. With workers, slots are
// opened ahead (all at the start, and an exhausted one at once), as
// TensorFlow's parallel interleave does; the input is consumed in the order
// the slots are found exhausted either way, so the order of elements is the
// same. Only the consumer pulls the input and opens slots; workers fetch
// elements of open slots into small per-slot buffers, the slots nearest the
// consumer's position first. With no workers the consumer fetches every
// element itself: one implementation for both.
//
// Slots are allocated as they are first opened, so memory follows the
// datasets open at once, never cycle_length.
#include <deque>
#include <exception>
#include <memory>
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
      : def_(std::move(def)), input_(std::move(input)), make_(make), cycle_(static_cast<size_t>(cycle)),
        block_(block), ahead_(std::max<int64_t>(2, block)), deterministic_(deterministic), open_ahead_(threads > 0) {
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
      for (size_t k = 0; open_ahead_ && k < cycle_ && !input_done_; ++k) Open(lock, k);
    }
    for (;;) {
      Slot* s = SlotAt(at_);
      if (!s || !s->it) {
        if (!input_done_) {
          Open(lock, at_);  // the cycle reached an empty slot: fill it (or learn that the input ended)
        } else if (open_ == 0) {
          return false;
        } else {
          Advance();
        }
      } else if (!s->buffer.empty()) {
        *out = std::move(s->buffer.front());
        s->buffer.pop_front();
        changed_.notify_all();
        if (++taken_ == block_) Advance();
        return true;
      } else if (s->error) {
        std::rethrow_exception(s->error);
      } else if (s->ended) {
        const size_t k = at_;
        Close(lock, k);
        Advance();
        if (open_ahead_) Open(lock, k);
      } else if (!s->busy) {
        Fetch(lock, *s);  // nothing fetched ahead: fetch it here
      } else if (!deterministic_ && MoveToReadySlot()) {
        continue;
      } else {
        WaitChecked(lock, changed_, [&] { return !s->busy || !s->buffer.empty(); });
      }
    }
  }

  Slot* SlotAt(size_t k) { return k < slots_.size() ? slots_[k].get() : nullptr; }

  // The next position of the cycle. Once the input has ended, empty slots
  // stay empty: the cycle skips them rather than visiting each.
  void Advance() {
    taken_ = 0;
    at_ = (at_ + 1) % cycle_;
    if (!input_done_ || open_ == 0) return;
    for (size_t n = 0; n < slots_.size(); ++n, at_ = (at_ + 1) % cycle_) {
      if (at_ >= slots_.size()) at_ = 0;
      if (slots_[at_] && slots_[at_]->it) return;
    }
  }

  // Not deterministic: the nearest slot that has something to hand out.
  bool MoveToReadySlot() {
    for (size_t d = 1; d < slots_.size(); ++d) {
      const size_t k = (at_ + d) % slots_.size();
      const Slot* s = slots_[k].get();
      if (s && s->it && (!s->buffer.empty() || s->error || s->ended)) {
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
    if (k >= slots_.size()) slots_.resize(k + 1);  // slots are opened in order: this grows by one
    slots_[k] = std::make_unique<Slot>();
    slots_[k]->it = std::move(it);
    ++open_;
    changed_.notify_all();
  }

  void Close(std::unique_lock<std::mutex>& lock, size_t k) {
    std::unique_ptr<Stage> it = std::move(slots_[k]->it);
    slots_[k].reset();  // not busy: it has ended
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
      Slot* s = slots_[(at_ + d) % slots_.size()].get();
      if (s && s->it && !s->busy && !s->ended && !s->error && static_cast<int64_t>(s->buffer.size()) < ahead_) {
        return s;
      }
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
  const size_t cycle_;
  std::vector<std::unique_ptr<Slot>> slots_;  // null or past the end: an empty slot
  const int64_t block_, ahead_;
  const bool deterministic_, open_ahead_;
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
    if (cycle > kMaxInterleaveCycle) {
      ThrowInvalidArgument("interleave: cycle_length ", cycle, " is more than the ", kMaxInterleaveCycle,
                           " datasets one interleave may keep open");
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
