// The layered Loom runtime: runs a finalised schedule with each op's batched
// function (a library function run by the graph executor), and its backward
// pass, a loop over the depths in reverse that scatter-adds argument
// gradients into the state below.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/loader.h"
#include "loom/schedule.h"

namespace treadle::loom {

// A loom ready to run: its spec and its ops' functions, validated against
// the op signatures. Immutable, so any number of runs may share it.
class LoomRuntime {
 public:
  // The runtime of the loom `metadata` describes, running the functions it
  // names in `library` (which it keeps alive); `written` holds those
  // functions as FunctionDefs, whose bodies must have the fingerprints the
  // metadata gives (see loom_registry.h).
  static std::shared_ptr<const LoomRuntime> FromLibrary(const proto::LoomMetadata& metadata,
                                                        std::shared_ptr<const graph::FunctionLibrary> library,
                                                        const proto::FunctionDefLibrary& written);

  const std::shared_ptr<const LoomSpec>& spec() const { return spec_; }
  // Captures of op k are inputs [capture_offset(k), capture_offset(k) + num_captures).
  int capture_offset(int op) const { return capture_offset_[op]; }
  int num_captures() const { return capture_offset_.back(); }
  const std::vector<graph::TensorSpec>& capture_specs() const { return capture_specs_; }
  bool differentiable(int op) const;
  // Runs op k's forward function for `calls` calls on `args` followed by
  // its captures, and checks that it returns a batch of `calls` results.
  std::vector<Tensor> RunOp(int op, int64_t calls, std::vector<Tensor> args, const std::vector<Tensor>& captures) const;
  // Runs op k for training (an op with a backward function): its outputs,
  // and in *saved the values its backward function reads (arguments,
  // captures and intermediates, as listed in backward_saved).
  std::vector<Tensor> RunOpForTraining(int op, int64_t calls, std::vector<Tensor> args,
                                       const std::vector<Tensor>& captures, std::vector<Tensor>* saved) const;
  // Runs op k's backward function: the values RunOpForTraining saved and
  // the output gradients -> gradients of the function's arguments and
  // captures (undefined for those the backward function gives none).
  std::vector<Tensor> RunOpBackward(int op, const std::vector<Tensor>& saved, std::vector<Tensor> output_grads) const;

 private:
  void CheckFunctions();
  void CheckGradientFunctions(int op);
  void CheckBodyFingerprints(const proto::FunctionDefLibrary& library) const;
  void CheckResults(int op, int64_t calls, const std::vector<Tensor>& outs) const;
  // Runs library function `function` of op k on *args with the op's captures
  // appended to them, and checks the op's results.
  std::vector<Tensor> RunChecked(int op, int function, int64_t calls, std::vector<Tensor>* args,
                                 const std::vector<Tensor>& captures) const;
  std::shared_ptr<const LoomSpec> spec_;
  std::shared_ptr<const graph::FunctionLibrary> library_;
  // Library function index per op, -1 when none.
  std::vector<int> forward_, training_, backward_;
  std::vector<int> capture_offset_;
  std::vector<graph::TensorSpec> capture_specs_;
};

// The tensors a run reads besides the schedule.
struct LoomInputs {
  std::vector<Tensor> named;     // one per named tensor
  std::vector<Tensor> batch;     // one per batch input (LoomSpec::batch_input_type_shapes)
  std::vector<Tensor> captures;  // every op's captures, op by op
};

// Calls [first, first + count) of a layer op: what one thread runs. A layer
// op's calls are split into chunks run in parallel (util/parallel.h).
struct Chunk {
  int64_t first = 0, count = 0;
};

// A layer op's forward run, for its backward pass: its chunks, and per
// chunk the values its backward function reads.
struct LayerRecord {
  std::vector<Chunk> chunks;
  std::vector<std::vector<Tensor>> saved;
};

// What the backward pass needs of a forward run: held by a variant tensor.
struct ForwardRecord : public HandleBase {
  std::string TypeName() const override { return "LoomForwardRecord"; }
  std::shared_ptr<const LoomRuntime> runtime;
  std::shared_ptr<const Schedule> schedule;  // null: the run saved nothing (inference)
  LoomInputs inputs;
  std::vector<std::vector<LayerRecord>> layers;  // [depth - 1][layer op]
};

// Checks `inputs` against the loom and the schedule (InvalidArgument naming
// the input), runs every layer, and returns one tensor per type shape: the
// outputs of that type shape in the order they were added. With `record`,
// runs each op's training function and fills `record` for the backward
// pass; without, runs the forward functions (inference), saving nothing.
std::vector<Tensor> RunForward(const std::shared_ptr<const LoomRuntime>& runtime,
                               const std::shared_ptr<const Schedule>& schedule, const LoomInputs& inputs,
                               ForwardRecord* record);

// Gradients of every input given the gradient of each output tensor
// (undefined: zero): the named tensors' (dense), then for each batch input
// the parts of an IndexedSlices (values: a batch of rows; indices: int64
// rows of the batch input), then the captures' (dense). Inputs that are not
// floating point get zeros (no rows for a batch input).
std::vector<Tensor> RunBackward(const ForwardRecord& record, const std::vector<Tensor>& output_grads);

// ---- The unrolled mode: one graph node per depth. States are contiguous
// batches, one per type shape and depth (a depth beyond the schedule's is
// empty), so each step is a pure function of tensors and has its gradient.

// The state at depth 0 (checks the inputs as RunForward does).
std::vector<Tensor> InitialStates(const LoomRuntime& rt, const Schedule& sc, const LoomInputs& in);
// The state at depth d from the state at depth d - 1.
std::vector<Tensor> RunLayer(const LoomRuntime& rt, const Schedule& sc, int32_t d, const std::vector<Tensor>& below,
                             const std::vector<Tensor>& captures);
// The outputs per type shape from the states of depths 0..num_depths (depth-major).
std::vector<Tensor> GatherOutputs(const LoomSpec& sp, const Schedule& sc, int32_t num_depths,
                                  const std::vector<Tensor>& states);
// Gradients, in the same layouts: of every state from the outputs'; of the
// state below and the captures from a depth's; of the named tensors and
// batch inputs from depth 0's.
std::vector<Tensor> GatherOutputsGrad(const LoomSpec& sp, const Schedule& sc, int32_t num_depths,
                                      const std::vector<Tensor>& output_grads);
std::vector<Tensor> RunLayerGrad(const LoomRuntime& rt, const Schedule& sc, int32_t d, const std::vector<Tensor>& below,
                                 const std::vector<Tensor>& captures, const std::vector<Tensor>& grads);
std::vector<Tensor> InitialStatesGrad(const LoomRuntime& rt, const Schedule& sc, const LoomInputs& in,
                                      const std::vector<Tensor>& grads0);

}  // namespace treadle::loom
