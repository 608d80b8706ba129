// The pieces of a loom run that the loop mode (runtime.cc), its backward
// pass (backward.cc) and the unrolled mode (unrolled.cc) share: checks of
// what a run reads, the depth-0 state, and running a layer op's calls in
// chunks on treadle's thread pool. Internal to src/cpp/loom.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "loom/runtime.h"

namespace treadle::loom {

// Is `t` a batch of `n` values of type shape `ts`?
bool IsBatchOf(const Tensor& t, const TypeShape& ts, int64_t n);

// A tensor of zeros.
Tensor Zeros(DType dtype, Dims dims);

// Checks `in` against the loom and the schedule (InvalidArgument naming the input).
void CheckInputs(const LoomRuntime& rt, const Schedule& sc, const LoomInputs& in);

// Checks the captured values against the ops' functions.
void CheckCaptures(const LoomRuntime& rt, const std::vector<Tensor>& captures);

// The rows of type shape t's state at depth d (0 beyond the schedule's depths).
int64_t RowsAt(const Schedule& sc, int32_t d, int t);

// Checks a state (one batch per type shape) at depth d; `what` names the caller.
void CheckState(const LoomSpec& sp, const Schedule& sc, int32_t d, const std::vector<Tensor>& state, const char* what);

// Runs fn(first, end) over row ranges covering [0, n), in parallel when the
// rows are many bytes (the depth-0 state of a large batch: a serial copy
// there would leave the other threads idle).
void ParallelRows(int64_t n, size_t row_bytes, const std::function<void(int64_t, int64_t)>& fn);

// Where depth-0 row i of type shape t lies: in a named tensor, a batch input or the constants.
const char* SourceRow(const LoomSpec& sp, const Schedule& sc, const LoomInputs& in, int t, int64_t i);

// The depth-0 state of type shape t: each row copied from its source.
Tensor InitialState(const LoomSpec& sp, const Schedule& sc, const LoomInputs& in, int t);

// Rows [first, first + count) of `t` (a batch of `ts` values), sharing its buffer.
Tensor RowView(const Tensor& t, int64_t first, int64_t count, const TypeShape& ts);

// Row pointers of a state that is one contiguous batch.
std::vector<const char*> RowsOf(const Tensor& t, int64_t n, size_t row_bytes);

// How a layer op's rows are numbered. kBelow (the unrolled mode): its
// arguments are rows of the state one depth down (LayerOp::args), its
// outputs rows of its depth's state (output_rows). kLoop (the loop mode):
// rows of all depths numbered together (LayerOp::sources, loop_output_rows;
// see Schedule::loop_rows), pass-through calls skipped.
enum class Layout { kBelow, kLoop };

// The rows that chunk `c` of layer op `lo` reads for argument `a`: one per
// call, or for a ragged argument every call's, call after call, starting at
// `first` of the argument's row list.
struct ArgRows {
  const int32_t* index;
  int64_t count;
  int64_t first;
};
ArgRows ChunkArgRows(const LayerOp& lo, size_t a, const Chunk& c, Layout layout);

// The row of output j's first call.
inline int64_t OutputRow(const LayerOp& lo, size_t j, Layout layout) {
  return layout == Layout::kLoop ? lo.loop_output_rows[j] : lo.output_rows[j];
}

// A layer op's calls split for the threads: at most one chunk per thread,
// none smaller than kMinChunkCalls (below that, splitting costs more than
// it gains).
std::vector<Chunk> SplitCalls(const LoomSpec& sp, const LayerOp& lo);

// Runs layer op `lo` at depth d in `chunks` (SplitCalls), in parallel: per
// chunk, its outputs. `rows` points at each row of the state it reads, per
// type shape, numbered as `layout` says. With `record`, it runs for training
// and records what the backward pass needs.
std::vector<std::vector<Tensor>> ForwardLayerOp(const LoomRuntime& rt, const LayerOp& lo, int32_t d,
                                                const std::vector<Chunk>& chunks,
                                                const std::vector<std::vector<const char*>>& rows,
                                                const std::vector<Tensor>& captures, LayerRecord* record,
                                                Layout layout);

// ---- The backward pass (backward.cc)

// Per depth (0..num_depths) and type shape, the gradient of the state from
// the gradients of the outputs (undefined where none flows).
std::vector<std::vector<Tensor>> OutputGrads(const LoomSpec& sp, const Schedule& sc, int32_t num_depths,
                                             const std::vector<Tensor>& output_grads);

// Per captured value, the gradients of every chunk at every depth, summed
// once at the end (SumCaptureGrads): one pass over them all instead of a
// read-modify-write of an accumulator for each.
using CaptureGrads = std::vector<std::vector<Tensor>>;

// The sum of each captured value's gradients (zeros where none flowed),
// blocks of elements shared among the threads.
std::vector<Tensor> SumCaptureGrads(const CaptureGrads& grads, const std::vector<Tensor>& captures);

// The backward pass of layer op `lo` at depth d from its forward run's
// record: the chunks' gradients, then their sums, in parallel. `grads` holds
// the gradient of the rows it computed, `below` those of the rows it read
// (allocated on first use with `rows_below` rows), numbered as `layout`
// says; in the loop mode both are the one gradient of all depths.
void BackwardLayerOp(const LoomRuntime& rt, const LayerOp& lo, int32_t d, const LayerRecord& record,
                     const std::vector<Tensor>& captures, const std::vector<Tensor>& grads,
                     const std::vector<int64_t>& rows_below, std::vector<Tensor>* below,
                     CaptureGrads* capture_grads, Layout layout);

// The loop mode's gradient of every row (Schedule::loop_rows) from the
// gradients of the outputs, per type shape (undefined where none flows).
std::vector<Tensor> LoopOutputGrads(const LoomSpec& sp, const Schedule& sc, const std::vector<Tensor>& output_grads);

// Depth 0's gradient, to the named tensors and batch inputs its rows came
// from: named tensors first (zeros where nothing flows), then per batch input
// its dense gradient, or with `sparse_batch` two tensors, the parts of an
// IndexedSlices: the rows of depth 0's gradient that came from it (values,
// in depth-0 order) and the batch rows they came from (int64 indices; a row
// read several times appears several times).
std::vector<Tensor> SourceGrads(const LoomSpec& sp, const Schedule& sc, const LoomInputs& in,
                                const std::vector<Tensor>& grads0, bool sparse_batch = false);

}  // namespace treadle::loom
