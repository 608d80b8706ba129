#include "loom/layers.h"

#include <algorithm>
#include <cstring>

#include "util/cancel.h"
#include "util/errors.h"
#include "util/parallel.h"

namespace treadle::loom {
namespace {

// Copies rows[index[i]] for i < count to dst, one after another; rows
// adjacent in memory go in one copy (the calls of one op read their
// arguments in the order they were computed more often than not).
void GatherRows(const std::vector<const char*>& rows, const int32_t* index, int64_t count, size_t row_bytes,
                char* dst) {
  int64_t i = 0;
  while (i < count) {
    const char* src = rows[index[i]];
    int64_t run = 1;
    while (i + run < count && rows[index[i + run]] == src + run * row_bytes) ++run;
    std::memcpy(dst, src, static_cast<size_t>(run) * row_bytes);
    dst += run * row_bytes;
    i += run;
  }
}

// The arguments of chunk `c` of layer op `lo`, gathered from the state
// below: its function's arguments (a ragged argument's values, then its row
// splits, relative to the chunk).
std::vector<Tensor> GatherArgs(const LoomSpec& sp, const LayerOp& lo, const std::vector<std::vector<const char*>>& rows,
                               const Chunk& c, Layout layout) {
  const OpSpec& op = sp.ops[lo.op];
  std::vector<Tensor> args;
  args.reserve(op.num_function_args);
  for (size_t a = 0; a < op.inputs.size(); ++a) {
    const TypeShape& ts = sp.type_shapes[op.inputs[a]];
    const ArgRows r = ChunkArgRows(lo, a, c, layout);
    Tensor batch(ts.dtype, ts.BatchDims(r.count));
    GatherRows(rows[op.inputs[a]], r.index, r.count, ts.row_bytes, static_cast<char*>(batch.raw_data()));
    args.push_back(std::move(batch));
    if (!op.ragged[a]) continue;
    Tensor splits(DType::kInt64, Dims{c.count + 1});
    const int64_t* s = lo.splits[a].data() + c.first;
    for (int64_t i = 0; i <= c.count; ++i) splits.data<int64_t>()[i] = s[i] - r.first;
    args.push_back(std::move(splits));
  }
  return args;
}

// Runs layer op `lo` on its gathered arguments: a pass-through returns them.
// With `saved`, an op that has gradient functions runs for training and
// leaves there what its backward function reads.
std::vector<Tensor> RunLayerOp(const LoomRuntime& rt, const LayerOp& lo, int32_t d, int64_t calls,
                               const std::vector<Tensor>& args, const std::vector<Tensor>& captures,
                               std::vector<Tensor>* saved) {
  const LoomSpec& sp = *rt.spec();
  if (sp.ops[lo.op].pass_through) return args;
  try {
    if (saved && rt.differentiable(lo.op)) return rt.RunOpForTraining(lo.op, calls, args, captures, saved);
    return rt.RunOp(lo.op, calls, args, captures);
  } catch (const Error& err) {
    throw Error(err.code(), StrCat(err.what(), "\n\t [[in loom ", sp.DescribeOp(lo.op), " at depth ", d, "]]"));
  }
}

constexpr int64_t kMinChunkCalls = 16;

}  // namespace

bool IsBatchOf(const Tensor& t, const TypeShape& ts, int64_t n) {
  if (t.dtype() != ts.dtype || t.rank() != static_cast<int>(ts.shape.size()) + 1 || t.dim(0) != n) return false;
  return std::equal(ts.shape.begin(), ts.shape.end(), t.shape().begin() + 1);
}

Tensor Zeros(DType dtype, Dims dims) {
  Tensor t(dtype, std::move(dims));
  if (t.nbytes()) std::memset(t.raw_data(), 0, t.nbytes());
  return t;
}

void CheckInputs(const LoomRuntime& rt, const Schedule& sc, const LoomInputs& in) {
  const LoomSpec& sp = *rt.spec();
  if (sc.spec->fingerprint != sp.fingerprint) {
    ThrowInvalidArgument("the schedule was made for another loom (fingerprint ", sc.spec->fingerprint,
                         "; this loom's is ", sp.fingerprint, ")");
  }
  if (sp.max_depth > 0 && sc.num_depths > sp.max_depth) {
    ThrowInvalidArgument("the schedule is ", sc.num_depths, " deep, beyond the loom's max_depth of ", sp.max_depth);
  }
  if (in.named.size() != sp.named_tensor_names.size() || in.batch.size() != sp.batch_input_type_shapes.size() ||
      static_cast<int>(in.captures.size()) != rt.num_captures()) {
    ThrowInvalidArgument("the loom takes ", sp.named_tensor_names.size(), " named tensors, ",
                         sp.batch_input_type_shapes.size(), " batch inputs and ", rt.num_captures(),
                         " captured values; got ", in.named.size(), ", ", in.batch.size(), " and ",
                         in.captures.size());
  }
  for (size_t i = 0; i < in.named.size(); ++i) {
    const TypeShape& ts = sp.type_shapes[sp.named_tensor_type_shapes[i]];
    const Tensor& t = in.named[i];
    if (t.dtype() != ts.dtype || t.shape() != ts.shape) {
      ThrowInvalidArgument("named tensor '", sp.named_tensor_names[i], "' must be ", ts.ToString(), ", got ",
                           t.DebugString());
    }
  }
  for (size_t b = 0; b < in.batch.size(); ++b) {
    const int t = sp.batch_input_type_shapes[b];
    const TypeShape& ts = sp.type_shapes[t];
    const Tensor& v = in.batch[b];
    if (v.rank() < 1 || !IsBatchOf(v, ts, v.dim(0))) {
      ThrowInvalidArgument("the batch input of ", ts.ToString(), " must be a batch of its values, got ",
                           v.DebugString());
    }
    if (v.dim(0) < sc.batch_rows_needed[t]) {
      ThrowInvalidArgument("the schedule reads row ", sc.batch_rows_needed[t] - 1, " of the batch input of ",
                           ts.ToString(), ", which has ", v.dim(0), " rows");
    }
  }
  for (int t = 0; t < sp.num_type_shapes(); ++t) {
    if (sc.batch_rows_needed[t] > 0 && sp.batch_input_slot[t] < 0) {
      ThrowInvalidArgument("the schedule reads a batch input of ", sp.type_shapes[t].ToString(),
                           ", which the loom has not");
    }
  }
  CheckCaptures(rt, in.captures);
}

void CheckCaptures(const LoomRuntime& rt, const std::vector<Tensor>& captures) {
  const auto& specs = rt.capture_specs();
  if (captures.size() != specs.size()) {
    ThrowInvalidArgument("the loom's ops capture ", specs.size(), " values, got ", captures.size());
  }
  for (size_t c = 0; c < captures.size(); ++c) {
    if (captures[c].dtype() != specs[c].dtype || !specs[c].shape.IsCompatibleWith(captures[c].shape())) {
      ThrowInvalidArgument("captured value ", c, " ('", specs[c].name, "') must be ", DTypeName(specs[c].dtype),
                           " ", specs[c].shape.ToString(), ", got ", captures[c].DebugString());
    }
  }
}

int64_t RowsAt(const Schedule& sc, int32_t d, int t) { return d <= sc.num_depths ? sc.rows[d][t] : 0; }

void CheckState(const LoomSpec& sp, const Schedule& sc, int32_t d, const std::vector<Tensor>& state, const char* what) {
  if (static_cast<int>(state.size()) != sp.num_type_shapes()) {
    ThrowInvalidArgument(what, ": expected ", sp.num_type_shapes(), " state tensors, got ", state.size());
  }
  for (int t = 0; t < sp.num_type_shapes(); ++t) {
    if (!IsBatchOf(state[t], sp.type_shapes[t], RowsAt(sc, d, t))) {
      ThrowInvalidArgument(what, ": the state of ", sp.type_shapes[t].ToString(), " at depth ", d, " must be a batch "
                           "of ", RowsAt(sc, d, t), ", got ", state[t].DebugString());
    }
  }
}

void ParallelRows(int64_t n, size_t row_bytes, const std::function<void(int64_t, int64_t)>& fn) {
  constexpr int64_t kMinParallelBytes = int64_t{256} << 10;
  const int parts = parallel::PartsFor(n * static_cast<int64_t>(row_bytes), kMinParallelBytes);
  parallel::ParallelFor(parts, [&](int i) {
    const parallel::Range r = parallel::Part(n, i, parts);
    fn(r.begin, r.end);
  });
}

const char* SourceRow(const LoomSpec& sp, const Schedule& sc, const LoomInputs& in, int t, int64_t i) {
  const int64_t index = sc.source_index[t][i];
  const size_t row_bytes = sp.type_shapes[t].row_bytes;
  switch (sc.source_kind[t][i]) {
    case kNamedTensorSource:
      return static_cast<const char*>(in.named[index].raw_data());
    case kBatchInputSource:
      return static_cast<const char*>(in.batch[sp.batch_input_slot[t]].raw_data()) + index * row_bytes;
    default:
      return static_cast<const char*>(sc.constants[t].raw_data()) + index * row_bytes;
  }
}

Tensor InitialState(const LoomSpec& sp, const Schedule& sc, const LoomInputs& in, int t) {
  const TypeShape& ts = sp.type_shapes[t];
  const int64_t n = sc.rows[0][t];
  Tensor state(ts.dtype, ts.BatchDims(n));
  char* dst = static_cast<char*>(state.raw_data());
  ParallelRows(n, ts.row_bytes, [&](int64_t first, int64_t end) {
    for (int64_t i = first; i < end; ++i) {
      std::memcpy(dst + i * ts.row_bytes, SourceRow(sp, sc, in, t, i), ts.row_bytes);
    }
  });
  return state;
}

Tensor RowView(const Tensor& t, int64_t first, int64_t count, const TypeShape& ts) {
  std::shared_ptr<Buffer> parent = t.buffer();
  char* p = static_cast<char*>(t.raw_data()) + static_cast<size_t>(first) * ts.row_bytes;
  return Tensor(ts.dtype, ts.BatchDims(count),
                Buffer::Wrap(p, static_cast<size_t>(count) * ts.row_bytes, [parent] {}));
}

std::vector<const char*> RowsOf(const Tensor& t, int64_t n, size_t row_bytes) {
  std::vector<const char*> rows(n);
  const char* p = static_cast<const char*>(t.raw_data());
  for (int64_t i = 0; i < n; ++i) rows[i] = p + i * row_bytes;
  return rows;
}

ArgRows ChunkArgRows(const LayerOp& lo, size_t a, const Chunk& c, Layout layout) {
  const int32_t* rows = (layout == Layout::kLoop ? lo.sources[a] : lo.args[a]).data();
  if (lo.splits[a].empty()) return {rows + c.first, c.count, c.first};
  const int64_t begin = lo.splits[a][c.first], end = lo.splits[a][c.first + c.count];
  return {rows + begin, end - begin, begin};
}

std::vector<Chunk> SplitCalls(const LoomSpec& sp, const LayerOp& lo) {
  int64_t n = std::min<int64_t>(parallel::NumThreads(), lo.calls / kMinChunkCalls);
  n = std::max<int64_t>(n, 1);
  std::vector<Chunk> chunks(n);
  for (int64_t i = 0; i < n; ++i) {
    const parallel::Range r = parallel::Part(lo.calls, static_cast<int>(i), static_cast<int>(n));
    chunks[i] = {r.begin, r.end - r.begin};
  }
  return chunks;
}

std::vector<std::vector<Tensor>> ForwardLayerOp(const LoomRuntime& rt, const LayerOp& lo, int32_t d,
                                                const std::vector<Chunk>& chunks,
                                                const std::vector<std::vector<const char*>>& rows,
                                                const std::vector<Tensor>& captures, LayerRecord* record,
                                                Layout layout) {
  cancel::Check();  // between layer ops: Ctrl-C and deadlines stop a long loom run
  std::vector<std::vector<Tensor>> outs(chunks.size());
  if (record) {
    record->chunks = chunks;
    record->saved.assign(chunks.size(), {});
  }
  parallel::ParallelFor(static_cast<int>(chunks.size()), [&](int i) {
    outs[i] = RunLayerOp(rt, lo, d, chunks[i].count, GatherArgs(*rt.spec(), lo, rows, chunks[i], layout), captures,
                         record ? &record->saved[i] : nullptr);
  });
  return outs;
}

}  // namespace treadle::loom
