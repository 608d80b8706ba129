// A planned graph or function body, ready to run many times, from many threads.
//
// Planning (once): keep only the nodes the results, control rets and effectful
// nodes need; order them topologically; give every value an integer slot;
// fold Const nodes into a constant table; decide for each input whether it is
// the value's last read (then the executor moves it out of its slot, so the
// buffer is freed as soon as its last consumer has run); and precompute output
// dtypes and shapes where they are static, so those nodes skip inference.
//
// Running: all per-run state (the slot vector) lives on the caller's stack;
// the Executable itself is never modified, so concurrent Runs are safe.
#pragma once

#include <memory>
#include <vector>

#include "graph/graph_ir.h"

namespace treadle::graph {

class FunctionLibrary;

class Executable {
 public:
  // Plans `body` (args, rets and results set). `library` runs the functions
  // its nodes call and must outlive the Executable. Throws InvalidArgument
  // when a node the results need is a Placeholder that is not fed.
  Executable(std::shared_ptr<const Body> body, const FunctionLibrary* library);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  // Checks `args` against the input specs (InvalidArgument naming the
  // argument), runs the planned nodes and returns the results.
  std::vector<Tensor> Run(const std::vector<Tensor>& args) const;

  int num_planned_nodes() const { return static_cast<int>(steps_.size()); }
  const std::vector<TensorSpec>& input_specs() const { return body_->args; }
  const std::vector<TensorSpec>& output_specs() const { return body_->results; }
  const Body& body() const { return *body_; }

 private:
  // Where a step (or a result) reads a value from.
  struct Source {
    int32_t index = 0;      // slot, or constant index when is_const
    bool is_const = false;
    bool last_use = false;  // no later read: move the tensor out of its slot
  };
  struct Step {
    const Node* node = nullptr;
    int32_t first_source = 0;  // inputs are sources_[first_source, first_source + num_inputs)
    int32_t num_inputs = 0;
    int32_t first_slot = 0;    // output k goes to slot first_slot + k, if keep_[that slot]
    bool infer_at_run = false; // some input or output shape is not static: infer per run
    const FunctionCaller* functions = nullptr;
    const KernelFn* kernel = nullptr;  // chosen for the node's static dtypes (ChooseKernel)
  };

  void Plan();
  void CheckArgs(const std::vector<Tensor>& args) const;
  struct RunScratch;  // per-run state of Run, on its stack
  void RunStep(const Step& step, const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs,
               RunScratch* scratch) const;
  void CheckOutputs(const Step& step, const std::vector<Tensor>& outputs) const;
  void CheckResult(size_t k, const Tensor& t) const;

  std::shared_ptr<const Body> body_;
  const FunctionLibrary* library_;
  std::vector<Step> steps_;
  std::vector<Source> sources_;         // step inputs, in step order
  std::vector<Source> result_sources_;  // one per result
  std::vector<char> check_result_;      // result k's declared shape says more than inference
  std::vector<Tensor> consts_;
  std::vector<char> keep_;              // per slot: something reads it
  std::vector<std::unique_ptr<FunctionCaller>> callers_;
  int32_t num_slots_ = 0;
  int32_t max_inputs_ = 0;
  int32_t max_outputs_ = 0;
};

}  // namespace treadle::graph
