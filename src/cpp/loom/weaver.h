// The Weaver: builds a schedule for a loom one value at a time.
//
// Every value is a result, named by an int id. Depth-0 results are named
// tensors, batch-input rows and constants; calling an op on results makes a
// call at depth 1 + the deepest argument, and arguments from shallower depths
// are first lifted by pass-through calls (memoised, so a value is lifted to
// each depth once). Results are stored column by column, which is also the
// WeaverMessage layout, so serialising, validating and merging are linear
// passes over flat arrays.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/loom_spec.h"

namespace treadle::loom {

// The contents of a schedule: what a Weaver builds and a WeaverMessage holds.
struct WeaverState {
  // Per result (indexed by id).
  std::vector<int32_t> depth, type_shape, op, output;
  std::vector<int64_t> position;
  // Per (depth d >= 1, op k): the number of calls, at calls[(d-1) * num_ops + k].
  std::vector<int64_t> calls;
  // Per (depth d >= 1, argument slot s): argument result ids in call order,
  // at wiring[(d-1) * num_arg_slots + s].
  std::vector<std::vector<int32_t>> wiring;
  // Per (depth, argument slot), for a ragged argument: each call's number of
  // results in `wiring` (empty for other arguments).
  std::vector<std::vector<int32_t>> row_lengths;
  int32_t deepest = 0;
  // Per type shape: the constants' bytes, row after row, and their count.
  std::vector<std::vector<char>> constants;
  std::vector<int64_t> num_constants;
  std::vector<int32_t> outputs;

  int64_t num_results() const { return static_cast<int64_t>(depth.size()); }
};

class Weaver {
 public:
  explicit Weaver(std::shared_ptr<const LoomSpec> spec);

  const LoomSpec& spec() const { return *spec_; }
  const std::shared_ptr<const LoomSpec>& spec_ptr() const { return spec_; }
  const WeaverState& state() const { return s_; }
  // Bumped by every change, so a finalised schedule can be reused while it holds.
  uint64_t version() const { return version_; }

  // ---- depth 0
  int32_t NamedTensor(int index);  // one result per named tensor, made on first use
  int32_t BatchInput(int type_shape, int64_t row);
  // `nbytes` must be the type shape's row size.
  int32_t Constant(int type_shape, const void* data, size_t nbytes);
  // `count` constants at once, `data` holding count rows; returns the first id.
  int32_t Constants(int type_shape, const void* data, int64_t count);

  // ---- op calls: returns the id of the call's first result (the others follow)
  int32_t Call(int op, const int32_t* args, int num_args);
  // A call of an op with ragged inputs: `counts` has one entry per input,
  // how many of `args` (the inputs' results one input after another) it
  // takes; 1 for each input that is not ragged.
  int32_t CallRagged(int op, const int32_t* args, const int32_t* counts);

  void AddOutput(int32_t result);

  // ---- inspection (ValueError for an unknown result)
  int32_t Depth(int32_t result) const;
  int TypeShapeOf(int32_t result) const;
  int32_t deepest() const { return s_.deepest; }
  int64_t num_results() const { return s_.num_results(); }

  // ---- messages
  std::string Serialize() const;
  // Appends a validated state (another schedule) with its ids, positions and
  // constants offset past this one's: merging schedules into one batch.
  // `rebuild_memos` false skips restoring the pass-through and named-tensor
  // memos (a merge that is only run, never woven into further).
  void Append(const WeaverState& other, bool rebuild_memos = true);

  // Weaves a whole forest or DAG at once: nodes 0..num_nodes-1, each a call
  // of op node_op[i], its arguments given as compressed sparse rows (entries
  // arg_splits[i] .. arg_splits[i+1]-1, in input order). Entry e feeds input
  // arg_input[e] of the node's op (several entries for a ragged input, one
  // for any other) from arg_source[e]: a result of an earlier node
  // (kArgNode: node arg_value[e], its output arg_output[e]), a row of a batch
  // input (kArgBatchInput: row arg_value[e] of the input's type shape), an
  // integer scalar constant (kArgConstant: the value arg_value[e]) or a named
  // tensor (kArgNamedTensor: index arg_value[e]). A node used by several
  // others is computed once. Output k is output output_index[k] of node
  // output_node[k]. Everything is checked before anything is woven. Returns
  // each node's first result.
  enum ArgSource : int32_t { kArgNode = 0, kArgBatchInput = 1, kArgConstant = 2, kArgNamedTensor = 3 };
  struct GraphArgs {
    int64_t num_nodes = 0;
    const int32_t* node_op = nullptr;
    const int64_t* arg_splits = nullptr;  // num_nodes + 1
    const int32_t* arg_input = nullptr;   // per entry
    const int32_t* arg_source = nullptr;
    const int64_t* arg_value = nullptr;
    const int32_t* arg_output = nullptr;
    int64_t num_outputs = 0;
    const int64_t* output_node = nullptr;
    const int32_t* output_index = nullptr;
  };
  std::vector<int32_t> WeaveGraph(const GraphArgs& args);

  // Weaves many binary trees at once: a WeaveGraph of leaf and node calls.
  struct TreesArgs {
    int64_t num_nodes = 0;
    const int64_t* left = nullptr;   // child node indices, -1 for a leaf (both -1)
    const int64_t* right = nullptr;
    const int64_t* leaf_values = nullptr;  // per node; used for leaves
    int leaf_op = -1;
    int node_op = -1;
    // How a leaf value becomes the leaf op's input: a row of the batch input
    // of `leaf_type_shape` (batch_input) or an integer scalar constant of it.
    bool leaf_from_batch_input = true;
    int leaf_type_shape = -1;
    const int64_t* roots = nullptr;  // nodes whose results become outputs
    int64_t num_roots = 0;
    std::vector<int> root_outputs;    // which of the root's results to output
  };
  // Returns, per node, the id of its first result (the leaf or node op's
  // first output). Nodes must list children before parents.
  std::vector<int32_t> WeaveTrees(const TreesArgs& args);

 private:
  int32_t NewResult(int32_t depth, int32_t ts, int32_t op, int32_t output, int64_t position);
  int32_t Lift(int32_t result, int32_t depth);
  // Checks result r as argument a of op; returns the depth a call on it needs.
  int32_t CheckArgument(int op, int a, int32_t r) const;
  // Adds a call of op on arguments already checked (counts as CallRagged's,
  // or null: one per input) at the depth they need.
  int32_t AddCall(int op, const int32_t* args, const int32_t* counts);
  int32_t NewCallResults(int op, int32_t depth, int64_t call);
  // WeaveGraph's checks of the whole description, depths included.
  void CheckGraph(const GraphArgs& g) const;
  void CheckResult(int32_t result, const char* what) const;
  void EnsureDepth(int32_t depth);
  void RebuildMemos(int64_t first_result);

  std::shared_ptr<const LoomSpec> spec_;
  WeaverState s_;
  std::vector<int32_t> lifted_;       // per result: its pass-through one depth up, or -1
  std::vector<int32_t> named_result_; // per named tensor: its result, or -1
  uint64_t version_ = 0;
};

// Parses and validates a serialized WeaverMessage against `spec`: every
// index in range, type shapes matching the ops, depths consistent with the
// arguments (so no cycles), positions dense, constants of the right dtype and
// shape, sizes bounded. Throws DataLoss for bytes that are not a message and
// InvalidArgument naming the problem otherwise.
WeaverState ParseWeaverMessage(const LoomSpec& spec, const void* data, size_t size);

}  // namespace treadle::loom
