// A finalised schedule: a WeaverState turned into what the runtime executes.
// The state of the loom at depth d is, per type shape, a list of rows: at
// depth 0 the depth-0 results in creation order; at depth d >= 1 the outputs
// of the calls at that depth, op by op, output by output, call by call. Every
// argument is a row of the state one depth below, so each layer is: gather
// each op's arguments, run the op on the batch, and the outputs are the next
// state.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "loom/weaver.h"
#include "tensor/handle.h"
#include "tensor/tensor.h"

namespace treadle::loom {

struct LayerOp {
  int op = 0;
  int64_t calls = 0;
  // Per argument: the rows of the state one depth below (of the argument's
  // type shape): one per call, or for a ragged argument every call's rows,
  // call after call, with splits[a] (calls + 1 entries) marking the calls.
  std::vector<std::vector<int32_t>> args;
  std::vector<std::vector<int64_t>> splits;  // per argument; empty unless ragged
  // Per output: the first row of its calls in this depth's state of its type shape.
  std::vector<int64_t> output_rows;

  // The loop mode's layout (see Schedule::loop_rows); empty for a pass-through.
  // Per argument, like args: the rows read, resolved through pass-throughs.
  std::vector<std::vector<int32_t>> sources;
  // Per argument: the depths its sources were computed at, ascending, each once.
  std::vector<std::vector<int32_t>> source_depths;
  // Per output: the loop-mode row of its first call.
  std::vector<int64_t> loop_output_rows;
};

struct Schedule : public HandleBase {
  std::string TypeName() const override { return "LoomSchedule"; }

  std::shared_ptr<const LoomSpec> spec;
  int32_t num_depths = 0;  // the deepest layer; layers 1..num_depths run
  // rows[d][t]: the state's size at depth d (0..num_depths) for type shape t.
  std::vector<std::vector<int64_t>> rows;
  // Depth 0, per type shape: each row's source kind (kNamedTensorSource, ...) and index.
  std::vector<std::vector<int8_t>> source_kind;
  std::vector<std::vector<int64_t>> source_index;
  std::vector<Tensor> constants;       // per type shape: [n, *shape], undefined when none
  std::vector<int64_t> batch_rows_needed;  // per type shape: 1 + the largest batch input row read (0: none)
  std::vector<std::vector<LayerOp>> layers;  // layers[d-1]: the ops called at depth d, in op order
  // Outputs per type shape, in the order added: (depth, row).
  std::vector<std::vector<std::pair<int32_t, int32_t>>> outputs;

  int64_t num_results = 0;

  // ---- The loop mode's layout (RunForward, RunBackward). Per type shape, the
  // rows of all depths are numbered together: depth 0's first (the
  // depth-0 rows, read where they are, in the named tensors, batch inputs and
  // constants), then each depth's calls, op by op. Pass-through calls have no
  // rows: whoever reads one reads the row it lifts, so a batch-input row is
  // read where it lies by a call many depths up, instead of being copied up
  // depth by depth. ED-Batch (arXiv 2302.03851) plans memory the same way.
  std::vector<int64_t> loop_rows;  // per type shape: rows in that numbering
  // Outputs per type shape, in the order added: (depth computed, loop-mode row).
  std::vector<std::vector<std::pair<int32_t, int32_t>>> loop_outputs;
  // Per depth: the deepest depth whose calls read a row computed at it (0 if none).
  std::vector<int32_t> last_read;
};

// Builds the schedule of a validated WeaverState.
std::shared_ptr<const Schedule> Finalize(const std::shared_ptr<const LoomSpec>& spec, const WeaverState& state);

}  // namespace treadle::loom
