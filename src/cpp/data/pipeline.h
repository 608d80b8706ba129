// td.data pipelines in C++: stages that pass elements (vectors of tensors)
// from one to the next without Python. A StageDef describes a stage; each
// iteration of a dataset makes fresh iterators from it (MakeIterator), so one
// description serves any number of concurrent iterations.
//
// Prefetch runs its input in a thread of its own, a bounded number of
// elements ahead; map and filter run traced graphs (graph::Executable) on
// the calling thread, parallel map and batch on threads of their own
// (parallel_stages.cc), and so does interleave (interleave.cc); cache to a
// file is cache_file.cc. Every wait of a consumer ends on Ctrl-C or its
// deadline, and every thread a stage starts stops with it (waiting.h).
// Python stages plug in through ExternalSource (the bindings wrap a Python
// iterator in one), taking the GIL only there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/record_file.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

namespace treadle::graph {
class Executable;
}

namespace treadle::data {

using Element = std::vector<Tensor>;

class Stage {
 public:
  virtual ~Stage() = default;
  // The next element into *out; false at the end. Errors are thrown, and a
  // stage that threw is not asked again.
  virtual bool Next(Element* out) = 0;
};

// Iterators keep their description alive (shared_from_this), so an
// iteration may outlive the dataset that started it.
class StageDef : public std::enable_shared_from_this<StageDef> {
 public:
  virtual ~StageDef() = default;
  virtual std::unique_ptr<Stage> MakeIterator() const = 0;

 protected:
  template <typename T>
  std::shared_ptr<const T> self() const {
    return std::static_pointer_cast<const T>(shared_from_this());
  }
};
using StageDefPtr = std::shared_ptr<const StageDef>;
using ExecutablePtr = std::shared_ptr<const graph::Executable>;

// Sources. TensorSlices validates its components (rank >= 1, one first
// dimension, no handle dtypes) and hands out copies of their rows.
StageDefPtr TensorSlices(std::vector<Tensor> components);
StageDefPtr Range(int64_t start, int64_t stop, int64_t step, DType dtype);
StageDefPtr RecordFiles(std::vector<std::string> paths, Compression compression);
// Elements from a factory of iterators implemented elsewhere (Python).
StageDefPtr ExternalSource(std::function<std::unique_ptr<Stage>()> make);

// Transformations. `fn` takes the element's components then `captures`.
StageDefPtr Map(StageDefPtr input, ExecutablePtr fn, std::vector<Tensor> captures);
StageDefPtr Filter(StageDefPtr input, ExecutablePtr predicate, std::vector<Tensor> captures);
// Map on `threads` threads of its own, at most 2 * threads elements ahead;
// deterministic: in the input's order, else each as soon as it is ready. An
// error is raised at its element's place (deterministic) and ends the stage.
StageDefPtr ParallelMap(StageDefPtr input, ExecutablePtr fn, std::vector<Tensor> captures, int threads,
                        bool deterministic);
StageDefPtr Batch(StageDefPtr input, int64_t batch_size, bool drop_remainder);
// Batch on `threads` threads (each takes a batch's elements from the input in
// turn and stacks them), at most 2 * threads batches ahead, in order when
// deterministic (parallel_stages.cc, with ParallelMap).
StageDefPtr ParallelBatch(StageDefPtr input, int64_t batch_size, bool drop_remainder, int threads,
                          bool deterministic);
// The rows of every element (components split along their first dimension,
// which must be the same for all of them).
StageDefPtr Unbatch(StageDefPtr input);
StageDefPtr Take(StageDefPtr input, int64_t count);  // count < 0: all
StageDefPtr Skip(StageDefPtr input, int64_t count);  // count < 0: all
// TensorFlow's shuffle buffer: each output is a uniformly drawn element of a
// buffer of buffer_size, replaced by the next input. The stream of draws is
// seeded by (seed, seed2) and, with reshuffle_each_iteration, by the number of
// iterations made before (so every iteration differs, reproducibly).
StageDefPtr Shuffle(StageDefPtr input, int64_t buffer_size, uint64_t seed, uint64_t seed2,
                    bool reshuffle_each_iteration);
StageDefPtr Repeat(StageDefPtr input, int64_t count);  // count < 0: forever
StageDefPtr Prefetch(StageDefPtr input, int64_t buffer_size);

// interleave (interleave.cc): make(element) is the dataset of an input
// element; `cycle` of them are read `block` elements at a time each, in
// TensorFlow's order when deterministic. `threads` workers fetch the open
// datasets' elements ahead (0: the consumer fetches them itself).
// cycle_length is at most kMaxInterleaveCycle (slots are allocated only as
// they are opened; the bound keeps a mistyped length a clear error).
using DatasetFactory = std::function<StageDefPtr(Element)>;
constexpr int64_t kMaxInterleaveCycle = int64_t{1} << 24;
StageDefPtr Interleave(StageDefPtr input, DatasetFactory make, int64_t cycle_length, int64_t block_length,
                       int threads, bool deterministic);

// cache(filename) (cache_file.cc): the input's elements, written to files
// named from `filename` on the first complete iteration and read from them
// after; `dtypes` and `shapes` are the element's components' (the dataset's
// element_spec), checked against the files.
StageDefPtr CacheFile(StageDefPtr input, std::string filename, std::vector<DType> dtypes,
                      std::vector<PartialShape> shapes);

// Stacks same-shaped tensors on a new first dimension (InvalidArgument
// naming the component and element otherwise).
Tensor StackComponent(const std::vector<Tensor>& parts, size_t component);
// A batch of elements: each component stacked (the elements are moved from).
Element StackElements(std::vector<Element>& group);
// fn(element's components..., captures...).
Element RunFunction(const graph::Executable& fn, Element element, const std::vector<Tensor>& captures);

}  // namespace treadle::data
