#include "data/pipeline.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "data/waiting.h"
#include "graph/executable.h"
#include "util/errors.h"
#include "util/thread_errors.h"

namespace treadle::data {

namespace {

// Copies `count` elements of t's dtype from src (at element offset src_at) to dst (at dst_at).
void CopyElements(const Tensor& src, int64_t src_at, const Tensor& dst, int64_t dst_at, int64_t count) {
  if (src.dtype() == DType::kString) {
    const std::string* s = src.data<std::string>() + src_at;
    std::string* d = dst.data<std::string>() + dst_at;
    for (int64_t i = 0; i < count; ++i) d[i] = s[i];
  } else if (count > 0) {
    const size_t width = DTypeSize(src.dtype());
    std::memcpy(static_cast<char*>(dst.raw_data()) + dst_at * width,
                static_cast<const char*>(src.raw_data()) + src_at * width, count * width);
  }
}

// ------------------------------------------------------------------ sources
class SlicesDef : public StageDef {
 public:
  explicit SlicesDef(std::vector<Tensor> c) : components_(std::move(c)) {
    if (components_.empty()) ThrowInvalidArgument("from_tensor_slices: no components");
    for (size_t k = 0; k < components_.size(); ++k) {
      const Tensor& t = components_[k];
      if (IsHandle(t.dtype())) ThrowInvalidArgument("from_tensor_slices: component ", k, " is a handle");
      if (t.rank() == 0) ThrowInvalidArgument("from_tensor_slices: component ", k, " is a scalar");
      if (t.dim(0) != components_[0].dim(0)) {
        ThrowInvalidArgument("from_tensor_slices: component ", k, " has first dimension ", t.dim(0),
                             " but component 0 has ", components_[0].dim(0));
      }
    }
  }
  std::unique_ptr<Stage> MakeIterator() const override;

  std::vector<Tensor> components_;
};

class SlicesIt : public Stage {
 public:
  explicit SlicesIt(std::shared_ptr<const SlicesDef> def) : def_(std::move(def)) {}
  bool Next(Element* out) override {
    const auto& comps = def_->components_;
    if (row_ >= comps[0].dim(0)) return false;
    out->clear();
    for (const Tensor& c : comps) {
      Dims shape(c.shape().begin() + 1, c.shape().end());
      Tensor slice(c.dtype(), shape);
      const int64_t n = slice.num_elements();
      CopyElements(c, row_ * n, slice, 0, n);
      out->push_back(std::move(slice));
    }
    ++row_;
    return true;
  }

 private:
  std::shared_ptr<const SlicesDef> def_;
  int64_t row_ = 0;
};

std::unique_ptr<Stage> SlicesDef::MakeIterator() const { return std::make_unique<SlicesIt>(self<SlicesDef>()); }

class RangeIt : public Stage {
 public:
  RangeIt(int64_t start, int64_t stop, int64_t step, DType dtype)
      : next_(start), stop_(stop), step_(step), dtype_(dtype) {}
  bool Next(Element* out) override {
    if (step_ > 0 ? next_ >= stop_ : next_ <= stop_) return false;
    Tensor t(dtype_, {});
    switch (dtype_) {
      case DType::kInt32: *t.data<int32_t>() = static_cast<int32_t>(next_); break;
      case DType::kInt64: *t.data<int64_t>() = next_; break;
      case DType::kFloat32: *t.data<float>() = static_cast<float>(next_); break;
      case DType::kFloat64: *t.data<double>() = static_cast<double>(next_); break;
      default: ThrowInvalidArgument("range: unsupported output type ", DTypeName(dtype_));
    }
    out->assign(1, std::move(t));
    // Stop rather than overflow past the end of int64.
    if ((step_ > 0 && next_ > INT64_MAX - step_) || (step_ < 0 && next_ < INT64_MIN - step_)) {
      next_ = stop_;
    } else {
      next_ += step_;
    }
    return true;
  }

 private:
  int64_t next_, stop_, step_;
  DType dtype_;
};

class RangeDef : public StageDef {
 public:
  RangeDef(int64_t start, int64_t stop, int64_t step, DType dtype)
      : start_(start), stop_(stop), step_(step), dtype_(dtype) {
    if (step == 0) ThrowInvalidArgument("range: step must not be 0");
  }
  std::unique_ptr<Stage> MakeIterator() const override {
    return std::make_unique<RangeIt>(start_, stop_, step_, dtype_);
  }

 private:
  int64_t start_, stop_, step_;
  DType dtype_;
};

class RecordsIt : public Stage {
 public:
  RecordsIt(std::shared_ptr<const StageDef> def, const std::vector<std::string>* paths, Compression c)
      : def_(std::move(def)), paths_(paths), compression_(c) {}
  bool Next(Element* out) override {
    std::string record;
    FillCheck check;  // many empty files in a row
    for (;;) {
      check.Step();
      if (!reader_) {
        if (file_ >= paths_->size()) return false;
        reader_ = std::make_unique<RecordFileReader>((*paths_)[file_++], compression_);
      }
      if (reader_->Next(&record)) break;
      reader_.reset();
    }
    out->assign(1, Tensor::Scalar<std::string>(std::move(record)));
    return true;
  }

 private:
  std::shared_ptr<const StageDef> def_;  // owns *paths_
  const std::vector<std::string>* paths_;
  Compression compression_;
  size_t file_ = 0;
  std::unique_ptr<RecordFileReader> reader_;
};

class RecordsDef : public StageDef {
 public:
  RecordsDef(std::vector<std::string> paths, Compression c) : paths_(std::move(paths)), compression_(c) {}
  std::unique_ptr<Stage> MakeIterator() const override {
    return std::make_unique<RecordsIt>(shared_from_this(), &paths_, compression_);
  }

 private:
  std::vector<std::string> paths_;
  Compression compression_;
};

class ExternalDef : public StageDef {
 public:
  explicit ExternalDef(std::function<std::unique_ptr<Stage>()> make) : make_(std::move(make)) {}
  std::unique_ptr<Stage> MakeIterator() const override { return make_(); }

 private:
  std::function<std::unique_ptr<Stage>()> make_;
};

// ------------------------------------------------------------------ functions

class MapIt : public Stage {
 public:
  MapIt(std::shared_ptr<const StageDef> def, std::unique_ptr<Stage> input, const graph::Executable* fn,
        const std::vector<Tensor>* captures)
      : def_(std::move(def)), input_(std::move(input)), fn_(fn), captures_(captures) {}
  bool Next(Element* out) override {
    Element in;
    if (!input_->Next(&in)) return false;
    *out = RunFunction(*fn_, std::move(in), *captures_);
    return true;
  }

 private:
  std::shared_ptr<const StageDef> def_;  // owns *fn_ and *captures_
  std::unique_ptr<Stage> input_;
  const graph::Executable* fn_;
  const std::vector<Tensor>* captures_;
};

class FilterIt : public Stage {
 public:
  FilterIt(std::shared_ptr<const StageDef> def, std::unique_ptr<Stage> input, const graph::Executable* fn,
        const std::vector<Tensor>* captures)
      : def_(std::move(def)), input_(std::move(input)), fn_(fn), captures_(captures) {}
  bool Next(Element* out) override {
    FillCheck check;  // a predicate that keeps nothing reads the whole input here
    while (input_->Next(out)) {
      check.Step();
      Element keep = RunFunction(*fn_, *out, *captures_);
      if (keep.size() != 1 || keep[0].dtype() != DType::kBool || keep[0].num_elements() != 1) {
        ThrowInvalidArgument("filter: the predicate must return a bool scalar");
      }
      if (*keep[0].data<bool>()) return true;
    }
    return false;
  }

 private:
  std::shared_ptr<const StageDef> def_;  // owns *fn_ and *captures_
  std::unique_ptr<Stage> input_;
  const graph::Executable* fn_;
  const std::vector<Tensor>* captures_;
};

class FunctionDef : public StageDef {
 public:
  FunctionDef(StageDefPtr input, ExecutablePtr fn, std::vector<Tensor> captures, bool filter)
      : input_(std::move(input)), fn_(std::move(fn)), captures_(std::move(captures)), filter_(filter) {}
  std::unique_ptr<Stage> MakeIterator() const override {
    if (filter_) return std::make_unique<FilterIt>(shared_from_this(), input_->MakeIterator(), fn_.get(), &captures_);
    return std::make_unique<MapIt>(shared_from_this(), input_->MakeIterator(), fn_.get(), &captures_);
  }

 private:
  StageDefPtr input_;
  ExecutablePtr fn_;
  std::vector<Tensor> captures_;
  bool filter_;
};

// ------------------------------------------------------------------ batch, take, repeat
class BatchIt : public Stage {
 public:
  BatchIt(std::unique_ptr<Stage> input, int64_t size, bool drop) : input_(std::move(input)), size_(size), drop_(drop) {}
  bool Next(Element* out) override {
    std::vector<Element> group;
    Element e;
    FillCheck check;
    while (static_cast<int64_t>(group.size()) < size_ && input_->Next(&e)) {
      group.push_back(std::move(e));
      check.Step();
    }
    if (group.empty() || (drop_ && static_cast<int64_t>(group.size()) < size_)) return false;
    *out = StackElements(group);
    return true;
  }

 private:
  std::unique_ptr<Stage> input_;
  int64_t size_;
  bool drop_;
};

class TakeIt : public Stage {
 public:
  TakeIt(std::unique_ptr<Stage> input, int64_t count) : input_(std::move(input)), left_(count) {}
  bool Next(Element* out) override {
    if (left_ == 0) return false;
    if (!input_->Next(out)) return false;
    if (left_ > 0) --left_;
    return true;
  }

 private:
  std::unique_ptr<Stage> input_;
  int64_t left_;
};

class RepeatIt : public Stage {
 public:
  RepeatIt(StageDefPtr input, int64_t count) : input_def_(std::move(input)), left_(count) {}
  bool Next(Element* out) override {
    FillCheck check;
    for (;;) {
      check.Step();
      if (!current_) {
        if (left_ == 0) return false;
        if (left_ > 0) --left_;
        current_ = input_def_->MakeIterator();
        produced_ = false;
      }
      if (current_->Next(out)) {
        produced_ = true;
        return true;
      }
      current_.reset();
      if (!produced_) return false;  // an empty input repeated forever is empty, not a hang
    }
  }

 private:
  StageDefPtr input_def_;
  int64_t left_;
  std::unique_ptr<Stage> current_;
  bool produced_ = false;
};

class UnbatchIt : public Stage {
 public:
  explicit UnbatchIt(std::unique_ptr<Stage> input) : input_(std::move(input)) {}
  bool Next(Element* out) override {
    FillCheck check;  // batches with no rows
    while (row_ >= rows_) {
      check.Step();
      if (!input_->Next(&current_)) return false;
      rows_ = -1;
      for (size_t k = 0; k < current_.size(); ++k) {
        const Tensor& t = current_[k];
        if (t.rank() == 0 || IsHandle(t.dtype())) {
          ThrowInvalidArgument("unbatch: component ", k, " is a ", t.rank() == 0 ? "scalar" : "handle");
        }
        if (rows_ >= 0 && t.dim(0) != rows_) {
          ThrowInvalidArgument("unbatch: the components' first dimensions differ: ", rows_, " vs. ", t.dim(0),
                               " (component ", k, ")");
        }
        rows_ = t.dim(0);
      }
      row_ = 0;
    }
    out->clear();
    for (const Tensor& c : current_) {
      Tensor row(c.dtype(), Dims(c.shape().begin() + 1, c.shape().end()));
      CopyElements(c, row_ * row.num_elements(), row, 0, row.num_elements());
      out->push_back(std::move(row));
    }
    ++row_;
    return true;
  }

 private:
  std::unique_ptr<Stage> input_;
  Element current_;
  int64_t rows_ = 0, row_ = 0;
};

class SkipIt : public Stage {
 public:
  SkipIt(std::unique_ptr<Stage> input, int64_t count) : input_(std::move(input)), count_(count) {}
  bool Next(Element* out) override {
    FillCheck check;
    for (; count_ != 0; count_ = count_ > 0 ? count_ - 1 : count_) {
      if (!input_->Next(out)) return false;
      check.Step();
    }
    return input_->Next(out);
  }

 private:
  std::unique_ptr<Stage> input_;
  int64_t count_;
};

class ShuffleIt : public Stage {
 public:
  ShuffleIt(std::unique_ptr<Stage> input, size_t size, std::seed_seq& seeds)
      : input_(std::move(input)), size_(size), rng_(seeds) {}
  bool Next(Element* out) override {
    FillCheck check;
    while (!input_done_ && buffer_.size() < size_) {
      Element e;
      if (!input_->Next(&e)) {
        input_done_ = true;
        break;
      }
      buffer_.push_back(std::move(e));
      check.Step();
    }
    if (buffer_.empty()) return false;
    const size_t i = std::uniform_int_distribution<size_t>(0, buffer_.size() - 1)(rng_);
    *out = std::move(buffer_[i]);
    if (i != buffer_.size() - 1) buffer_[i] = std::move(buffer_.back());
    buffer_.pop_back();
    return true;
  }

 private:
  std::unique_ptr<Stage> input_;
  size_t size_;
  std::mt19937_64 rng_;
  std::vector<Element> buffer_;
  bool input_done_ = false;
};

class ShuffleDef : public StageDef {
 public:
  ShuffleDef(StageDefPtr input, int64_t size, uint64_t seed, uint64_t seed2, bool reshuffle)
      : input_(std::move(input)), size_(size), seed_(seed), seed2_(seed2), reshuffle_(reshuffle) {
    if (size < 1) ThrowInvalidArgument("shuffle: buffer_size must be greater than zero, got ", size);
  }
  std::unique_ptr<Stage> MakeIterator() const override {
    const uint64_t epoch = reshuffle_ ? epochs_.fetch_add(1) : 0;
    std::seed_seq seeds{static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32),
                        static_cast<uint32_t>(seed2_), static_cast<uint32_t>(seed2_ >> 32),
                        static_cast<uint32_t>(epoch), static_cast<uint32_t>(epoch >> 32)};
    return std::make_unique<ShuffleIt>(input_->MakeIterator(), static_cast<size_t>(size_), seeds);
  }

 private:
  StageDefPtr input_;
  int64_t size_;
  uint64_t seed_, seed2_;
  bool reshuffle_;
  mutable std::atomic<uint64_t> epochs_{0};
};

enum class Kind { kBatch, kUnbatch, kTake, kSkip, kRepeat };

class SimpleDef : public StageDef {
 public:
  SimpleDef(StageDefPtr input, Kind kind, int64_t n, bool flag)
      : input_(std::move(input)), kind_(kind), n_(n), flag_(flag) {}
  std::unique_ptr<Stage> MakeIterator() const override {
    switch (kind_) {
      case Kind::kBatch: return std::make_unique<BatchIt>(input_->MakeIterator(), n_, flag_);
      case Kind::kUnbatch: return std::make_unique<UnbatchIt>(input_->MakeIterator());
      case Kind::kTake: return std::make_unique<TakeIt>(input_->MakeIterator(), n_);
      case Kind::kSkip: return std::make_unique<SkipIt>(input_->MakeIterator(), n_);
      default: return std::make_unique<RepeatIt>(input_, n_);
    }
  }

 private:
  StageDefPtr input_;
  Kind kind_;
  int64_t n_;
  bool flag_;
};

// ------------------------------------------------------------------ prefetch
// The producer thread and the consumer share this; the iterator's destructor
// cancels the producer and joins it.
struct PrefetchState {
  std::mutex mu;
  std::condition_variable changed;
  std::deque<Element> buffer;
  std::exception_ptr error;
  bool done = false;
  bool cancelled = false;
};

class PrefetchIt : public Stage {
 public:
  PrefetchIt(std::unique_ptr<Stage> input, int64_t size) : size_(static_cast<size_t>(size)) {
    thread_ = std::thread([this, in = std::move(input)]() mutable { Produce(std::move(in)); });
  }
  ~PrefetchIt() override {
    {
      std::lock_guard<std::mutex> lock(state_.mu);
      state_.cancelled = true;
    }
    cancellation_.Stop();
    state_.changed.notify_all();
    thread_.join();
  }

  bool Next(Element* out) override {
    std::unique_lock<std::mutex> lock(state_.mu);
    WaitChecked(lock, state_.changed, [&] { return !state_.buffer.empty() || state_.done; });
    if (!state_.buffer.empty()) {
      *out = std::move(state_.buffer.front());
      state_.buffer.pop_front();
      state_.changed.notify_all();
      return true;
    }
    if (state_.error) std::rethrow_exception(std::exchange(state_.error, nullptr));
    return false;
  }

 private:
  void Produce(std::unique_ptr<Stage> input) {
    cancel::AdoptScope scope(cancellation_.state());
    StageThreadScope stage_thread;
    std::exception_ptr error = CaptureWorkError([&] {
      Element e;
      while (input->Next(&e)) {
        std::unique_lock<std::mutex> lock(state_.mu);
        state_.changed.wait(lock, [&] { return state_.buffer.size() < size_ || state_.cancelled; });
        if (state_.cancelled) break;
        state_.buffer.push_back(std::move(e));
        state_.changed.notify_all();
      }
    });
    if (error) {
      std::lock_guard<std::mutex> lock(state_.mu);
      state_.error = error;
    }
    input.reset();  // the input's own threads and Python objects go with this thread
    std::lock_guard<std::mutex> lock(state_.mu);
    state_.done = true;
    state_.changed.notify_all();
  }

  size_t size_;
  PrefetchState state_;
  WorkerCancellation cancellation_;  // before thread_: the thread uses it from its start
  std::thread thread_;
};

class PrefetchDef : public StageDef {
 public:
  PrefetchDef(StageDefPtr input, int64_t size) : input_(std::move(input)), size_(size) {
    if (size < 1) ThrowInvalidArgument("prefetch: buffer_size must be positive, got ", size);
  }
  std::unique_ptr<Stage> MakeIterator() const override {
    return std::make_unique<PrefetchIt>(input_->MakeIterator(), size_);
  }

 private:
  StageDefPtr input_;
  int64_t size_;
};

void CheckPositive(int64_t n, const char* what) {
  if (n < 1) ThrowInvalidArgument(what, " must be greater than zero, got ", n);
}

}  // namespace

Element RunFunction(const graph::Executable& fn, Element element, const std::vector<Tensor>& captures) {
  element.insert(element.end(), captures.begin(), captures.end());
  return fn.Run(element);
}

Element StackElements(std::vector<Element>& group) {
  Element out;
  std::vector<Tensor> parts(group.size());
  for (size_t c = 0; c < group[0].size(); ++c) {
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i].size() != group[0].size()) {
        ThrowInvalidArgument("batch: element ", i, " has ", group[i].size(), " components, element 0 has ",
                             group[0].size());
      }
      parts[i] = std::move(group[i][c]);
    }
    out.push_back(StackComponent(parts, c));
  }
  return out;
}

Tensor StackComponent(const std::vector<Tensor>& parts, size_t component) {
  const Tensor& first = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].shape() != first.shape() || parts[i].dtype() != first.dtype()) {
      ThrowInvalidArgument("Cannot batch tensors with different shapes in component ", component,
                           ". First element had shape ", DimsToString(first.shape()), " and element ", i,
                           " had shape ", DimsToString(parts[i].shape()), ".");
    }
  }
  if (IsHandle(first.dtype())) ThrowInvalidArgument("batch: component ", component, " is a handle");
  Dims shape{static_cast<int64_t>(parts.size())};
  shape.insert(shape.end(), first.shape().begin(), first.shape().end());
  Tensor out(first.dtype(), shape);
  const int64_t n = first.num_elements();
  for (size_t i = 0; i < parts.size(); ++i) CopyElements(parts[i], 0, out, static_cast<int64_t>(i) * n, n);
  return out;
}

StageDefPtr TensorSlices(std::vector<Tensor> components) {
  return std::make_shared<SlicesDef>(std::move(components));
}
StageDefPtr Range(int64_t start, int64_t stop, int64_t step, DType dtype) {
  return std::make_shared<RangeDef>(start, stop, step, dtype);
}
StageDefPtr RecordFiles(std::vector<std::string> paths, Compression compression) {
  return std::make_shared<RecordsDef>(std::move(paths), compression);
}
StageDefPtr ExternalSource(std::function<std::unique_ptr<Stage>()> make) {
  return std::make_shared<ExternalDef>(std::move(make));
}
StageDefPtr Map(StageDefPtr input, ExecutablePtr fn, std::vector<Tensor> captures) {
  return std::make_shared<FunctionDef>(std::move(input), std::move(fn), std::move(captures), false);
}
StageDefPtr Filter(StageDefPtr input, ExecutablePtr predicate, std::vector<Tensor> captures) {
  return std::make_shared<FunctionDef>(std::move(input), std::move(predicate), std::move(captures), true);
}
StageDefPtr Batch(StageDefPtr input, int64_t batch_size, bool drop_remainder) {
  CheckPositive(batch_size, "batch_size");
  return std::make_shared<SimpleDef>(std::move(input), Kind::kBatch, batch_size, drop_remainder);
}
StageDefPtr Take(StageDefPtr input, int64_t count) {
  return std::make_shared<SimpleDef>(std::move(input), Kind::kTake, count, false);
}
StageDefPtr Unbatch(StageDefPtr input) {
  return std::make_shared<SimpleDef>(std::move(input), Kind::kUnbatch, 0, false);
}
StageDefPtr Skip(StageDefPtr input, int64_t count) {
  return std::make_shared<SimpleDef>(std::move(input), Kind::kSkip, count, false);
}
StageDefPtr Shuffle(StageDefPtr input, int64_t buffer_size, uint64_t seed, uint64_t seed2, bool reshuffle) {
  return std::make_shared<ShuffleDef>(std::move(input), buffer_size, seed, seed2, reshuffle);
}
StageDefPtr Repeat(StageDefPtr input, int64_t count) {
  return std::make_shared<SimpleDef>(std::move(input), Kind::kRepeat, count, false);
}
StageDefPtr Prefetch(StageDefPtr input, int64_t buffer_size) {
  return std::make_shared<PrefetchDef>(std::move(input), buffer_size);
}

}  // namespace treadle::data
