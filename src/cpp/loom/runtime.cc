#include "loom/runtime.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "graph/executable.h"
#include "graph/library.h"
#include "util/errors.h"
#include "util/parallel.h"

namespace treadle::loom {

namespace {

// Can a batch of `ts` values have shape `shape` (as a function declares it)?
bool FitsBatch(const PartialShape& shape, const TypeShape& ts) {
  if (!shape.known_rank) return true;
  if (shape.rank() != static_cast<int>(ts.shape.size()) + 1) return false;
  for (size_t i = 0; i < ts.shape.size(); ++i) {
    if (shape.dims[i + 1] >= 0 && shape.dims[i + 1] != ts.shape[i]) return false;
  }
  return true;
}

bool IsBatchOf(const Tensor& t, const TypeShape& ts, int64_t n) {
  if (t.dtype() != ts.dtype || t.rank() != static_cast<int>(ts.shape.size()) + 1 || t.dim(0) != n) return false;
  return std::equal(ts.shape.begin(), ts.shape.end(), t.shape().begin() + 1);
}

// Rows [first, first + count) of `t` (a batch of `ts` values), sharing its buffer.
Tensor RowView(const Tensor& t, int64_t first, int64_t count, const TypeShape& ts) {
  std::shared_ptr<Buffer> parent = t.buffer();
  char* p = static_cast<char*>(t.raw_data()) + static_cast<size_t>(first) * ts.row_bytes;
  return Tensor(ts.dtype, ts.BatchDims(count),
                Buffer::Wrap(p, static_cast<size_t>(count) * ts.row_bytes, [parent] {}));
}

Tensor Zeros(DType dtype, Dims dims) {
  Tensor t(dtype, std::move(dims));
  if (t.nbytes()) std::memset(t.raw_data(), 0, t.nbytes());
  return t;
}

void GatherRows(const std::vector<const char*>& rows, const int32_t* index, int64_t count, size_t row_bytes,
                char* dst) {
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(dst, rows[index[i]], row_bytes);
    dst += row_bytes;
  }
}

// dst row dst_row += src row src_row (rows of row_elements floats or doubles).
void AddRow(const Tensor& src, int64_t src_row, Tensor* dst, int64_t dst_row, int64_t row_elements) {
  if (src.dtype() == DType::kFloat32) {
    const float* s = src.data<float>() + src_row * row_elements;
    float* d = dst->data<float>() + dst_row * row_elements;
    for (int64_t e = 0; e < row_elements; ++e) d[e] += s[e];
  } else {
    const double* s = src.data<double>() + src_row * row_elements;
    double* d = dst->data<double>() + dst_row * row_elements;
    for (int64_t e = 0; e < row_elements; ++e) d[e] += s[e];
  }
}

}  // namespace

// ---------------------------------------------------------------- runtime

std::shared_ptr<const LoomRuntime> LoomRuntime::FromLoomDef(const proto::LoomDef& def) {
  auto rt = std::shared_ptr<LoomRuntime>(new LoomRuntime());
  rt->spec_ = LoomSpec::FromProto(def.metadata());
  const std::string library = def.library().SerializeAsString();
  rt->graph_ = graph::LoadGraphDef(library.data(), library.size());
  rt->CheckFunctions();
  return rt;
}

bool LoomRuntime::differentiable(int op) const { return spec_->ops[op].pass_through || backward_[op] >= 0; }

void LoomRuntime::CheckFunctions() {
  const LoomSpec& sp = *spec_;
  const graph::FunctionLibrary& lib = *graph_.library;
  capture_offset_.push_back(0);
  for (int k = 0; k < sp.num_ops(); ++k) {
    const OpSpec& op = sp.ops[k];
    const std::string where = "LoomDef: " + sp.DescribeOp(k);
    forward_.push_back(-1);
    training_.push_back(-1);
    backward_.push_back(-1);
    if (op.pass_through) {
      capture_offset_.push_back(capture_offset_.back());
      continue;
    }
    const int f = lib.Find(op.function_name);
    if (f < 0) ThrowInvalidArgument(where, " names function '", op.function_name, "', which the library lacks");
    const graph::FunctionSignature& sig = lib.signature(f);
    const size_t nin = op.inputs.size(), nout = op.outputs.size();
    if (sig.inputs.size() != nin + op.num_captures || sig.outputs.size() != nout) {
      ThrowInvalidArgument(where, ": function '", op.function_name, "' takes ", sig.inputs.size(), " and returns ",
                           sig.outputs.size(), " values, but the op has ", nin, " inputs, ", op.num_captures,
                           " captures and ", nout, " outputs");
    }
    auto check = [&](const graph::TensorSpec& s, int ts, const char* what, size_t i) {
      const TypeShape& t = sp.type_shapes[ts];
      if (s.dtype != t.dtype || !FitsBatch(s.shape, t)) {
        ThrowInvalidArgument(where, ": ", what, " ", i, " of function '", op.function_name, "' is ",
                             DTypeName(s.dtype), " ", s.shape.ToString(), ", not a batch of ", t.ToString());
      }
    };
    for (size_t a = 0; a < nin; ++a) check(sig.inputs[a], op.inputs[a], "argument", a);
    for (size_t j = 0; j < nout; ++j) check(sig.outputs[j], op.outputs[j], "result", j);
    for (size_t c = nin; c < sig.inputs.size(); ++c) capture_specs_.push_back(sig.inputs[c]);
    capture_offset_.push_back(capture_offset_.back() + op.num_captures);
    forward_.back() = f;
    if (!op.backward_function_name.empty()) CheckGradientFunctions(k);
  }
}

// The training function must return what the forward function returns and
// then intermediates; the backward function must take the listed output
// gradients and saved values and return the listed argument gradients.
void LoomRuntime::CheckGradientFunctions(int k) {
  const OpSpec& op = spec_->ops[k];
  const graph::FunctionLibrary& lib = *graph_.library;
  const std::string where = "LoomDef: " + spec_->DescribeOp(k);
  const graph::FunctionSignature& sig = lib.signature(forward_[k]);
  const int t = lib.Find(op.training_function_name);
  const int b = lib.Find(op.backward_function_name);
  if (t < 0 || b < 0) {
    ThrowInvalidArgument(where, " names training function '", op.training_function_name, "' and backward function '",
                         op.backward_function_name, "'; the library lacks ", t < 0 ? "the first" : "the second");
  }
  const graph::FunctionSignature& ts = lib.signature(t);
  const graph::FunctionSignature& bs = lib.signature(b);
  const size_t nfwd = sig.inputs.size(), nout = sig.outputs.size();
  bool ok = ts.inputs.size() == nfwd && ts.outputs.size() >= nout;
  for (size_t i = 0; ok && i < nfwd; ++i) ok = ts.inputs[i].dtype == sig.inputs[i].dtype;
  for (size_t j = 0; ok && j < nout; ++j) ok = ts.outputs[j].dtype == sig.outputs[j].dtype;
  if (!ok) {
    ThrowInvalidArgument(where, ": training function '", op.training_function_name, "' must take the forward ",
                         "function's arguments and return its results followed by intermediates");
  }
  const size_t nvalues = nfwd + ts.outputs.size();
  auto value_dtype = [&](size_t v) { return v < nfwd ? sig.inputs[v].dtype : ts.outputs[v - nfwd].dtype; };
  const auto& dys = op.backward_output_gradients;
  const auto& saved = op.backward_saved;
  const auto& grads = op.backward_input_gradients;
  ok = bs.inputs.size() == dys.size() + saved.size() && bs.outputs.size() == grads.size();
  for (size_t j = 0; ok && j < dys.size(); ++j) {
    ok = bs.inputs[j].dtype == sig.outputs[dys[j]].dtype && IsFloating(sig.outputs[dys[j]].dtype);
  }
  for (size_t i = 0; ok && i < saved.size(); ++i) {
    ok = static_cast<size_t>(saved[i]) < nvalues && bs.inputs[dys.size() + i].dtype == value_dtype(saved[i]);
  }
  for (size_t g = 0; ok && g < grads.size(); ++g) ok = bs.outputs[g].dtype == sig.inputs[grads[g]].dtype;
  if (!ok) {
    ThrowInvalidArgument(where, ": backward function '", op.backward_function_name,
                         "' must take the gradients of the outputs listed in backward_output_gradients and the ",
                         "values listed in backward_saved (of ", nvalues, " forward values), and return the ",
                         "gradients of the arguments listed in backward_input_gradients");
  }
  training_[k] = t;
  backward_[k] = b;
}

void LoomRuntime::CheckResults(int k, int64_t calls, const std::vector<Tensor>& outs) const {
  const OpSpec& op = spec_->ops[k];
  for (size_t j = 0; j < op.outputs.size(); ++j) {
    const TypeShape& ts = spec_->type_shapes[op.outputs[j]];
    const int64_t n = calls >= 0 ? calls : (outs[j].rank() > 0 ? outs[j].dim(0) : -1);
    if (!IsBatchOf(outs[j], ts, n)) {
      ThrowInvalidArgument("loom ", spec_->DescribeOp(k), " returned ", outs[j].DebugString(), " as result ", j,
                           " for a batch of ", n, " calls; expected a batch of ", ts.ToString());
    }
  }
}

std::vector<Tensor> LoomRuntime::RunOp(int k, std::vector<Tensor> args, const std::vector<Tensor>& captures) const {
  const int64_t calls = args.empty() ? -1 : args[0].dim(0);
  args.insert(args.end(), captures.begin() + capture_offset_[k], captures.begin() + capture_offset_[k + 1]);
  std::vector<Tensor> outs = graph_.library->Compiled(forward_[k]).Run(args);
  CheckResults(k, calls, outs);
  return outs;
}

std::vector<Tensor> LoomRuntime::RunOpForTraining(int k, std::vector<Tensor> args, const std::vector<Tensor>& captures,
                                                  std::vector<Tensor>* saved) const {
  const OpSpec& op = spec_->ops[k];
  const int64_t calls = args.empty() ? -1 : args[0].dim(0);
  args.insert(args.end(), captures.begin() + capture_offset_[k], captures.begin() + capture_offset_[k + 1]);
  std::vector<Tensor> outs = graph_.library->Compiled(training_[k]).Run(args);
  CheckResults(k, calls, outs);
  const size_t nfwd = args.size(), nout = op.outputs.size();
  saved->clear();
  for (int v : op.backward_saved) {
    saved->push_back(static_cast<size_t>(v) < nfwd ? args[v] : outs[v - nfwd]);
  }
  outs.resize(nout);
  return outs;
}

std::vector<Tensor> LoomRuntime::RunOpBackward(int k, const std::vector<Tensor>& saved,
                                               std::vector<Tensor> output_grads) const {
  const OpSpec& op = spec_->ops[k];
  std::vector<Tensor> args;
  args.reserve(op.backward_output_gradients.size() + saved.size());
  for (int j : op.backward_output_gradients) args.push_back(std::move(output_grads[j]));
  args.insert(args.end(), saved.begin(), saved.end());
  std::vector<Tensor> results = graph_.library->Compiled(backward_[k]).Run(args);
  std::vector<Tensor> grads(op.inputs.size() + op.num_captures);  // undefined: no gradient
  for (size_t i = 0; i < results.size(); ++i) grads[op.backward_input_gradients[i]] = std::move(results[i]);
  return grads;
}

// ---------------------------------------------------------------- forward

namespace {

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
  const auto& specs = rt.capture_specs();
  for (size_t c = 0; c < in.captures.size(); ++c) {
    const Tensor& v = in.captures[c];
    if (v.dtype() != specs[c].dtype || !specs[c].shape.IsCompatibleWith(v.shape())) {
      ThrowInvalidArgument("captured value ", c, " ('", specs[c].name, "') must be ", DTypeName(specs[c].dtype),
                           " ", specs[c].shape.ToString(), ", got ", v.DebugString());
    }
  }
}

// Runs fn(first, end) over row ranges covering [0, n), in parallel when the
// rows are many bytes (the depth-0 state of a large batch: a serial copy
// there would leave the other threads idle).
void ParallelRows(int64_t n, size_t row_bytes, const std::function<void(int64_t, int64_t)>& fn) {
  constexpr size_t kMinParallelBytes = size_t{256} << 10;
  const int parts = static_cast<size_t>(n) * row_bytes < kMinParallelBytes ? 1 : parallel::NumThreads();
  parallel::ParallelFor(parts, [&](int i) { fn(n * i / parts, n * (i + 1) / parts); });
}

// The depth-0 state of type shape t: each row copied from its source.
Tensor InitialState(const LoomSpec& sp, const Schedule& sc, const LoomInputs& in, int t) {
  const TypeShape& ts = sp.type_shapes[t];
  const int64_t n = sc.rows[0][t];
  Tensor state(ts.dtype, ts.BatchDims(n));
  char* dst = static_cast<char*>(state.raw_data());
  const auto& kinds = sc.source_kind[t];
  const auto& index = sc.source_index[t];
  const int slot = sp.batch_input_slot[t];
  ParallelRows(n, ts.row_bytes, [&](int64_t first, int64_t end) {
    for (int64_t i = first; i < end; ++i) {
      const char* src;
      if (kinds[i] == kNamedTensorSource) {
        src = static_cast<const char*>(in.named[index[i]].raw_data());
      } else if (kinds[i] == kBatchInputSource) {
        src = static_cast<const char*>(in.batch[slot].raw_data()) + index[i] * ts.row_bytes;
      } else {
        src = static_cast<const char*>(sc.constants[t].raw_data()) + index[i] * ts.row_bytes;
      }
      std::memcpy(dst + i * ts.row_bytes, src, ts.row_bytes);
    }
  });
  return state;
}

// Row pointers of a state that is one contiguous batch.
std::vector<const char*> RowsOf(const Tensor& t, int64_t n, size_t row_bytes) {
  std::vector<const char*> rows(n);
  const char* p = static_cast<const char*>(t.raw_data());
  for (int64_t i = 0; i < n; ++i) rows[i] = p + i * row_bytes;
  return rows;
}


// Per depth (0..num_depths) and type shape, the gradient of the state from
// the gradients of the outputs (undefined where none flows).
std::vector<std::vector<Tensor>> OutputGrads(const LoomSpec& sp, const Schedule& sc, int32_t num_depths,
                                             const std::vector<Tensor>& output_grads) {
  const int T = sp.num_type_shapes();
  if (static_cast<int>(output_grads.size()) != T) {
    ThrowInvalidArgument("the loom's backward pass takes ", T, " output gradients, got ", output_grads.size());
  }
  std::vector<std::vector<Tensor>> grads(num_depths + 1, std::vector<Tensor>(T));
  for (int t = 0; t < T; ++t) {
    const TypeShape& ts = sp.type_shapes[t];
    const Tensor& g = output_grads[t];
    if (g.defined() && !IsBatchOf(g, ts, static_cast<int64_t>(sc.outputs[t].size()))) {
      ThrowInvalidArgument("the gradient of the loom's output of ", ts.ToString(), " must be a batch of ",
                           sc.outputs[t].size(), ", got ", g.DebugString());
    }
    if (!g.defined() || !IsFloating(ts.dtype)) continue;
    for (size_t i = 0; i < sc.outputs[t].size(); ++i) {
      const auto [d, row] = sc.outputs[t][i];
      Tensor& dst = grads[d][t];
      if (!dst.defined()) dst = Zeros(ts.dtype, ts.BatchDims(sc.rows[d][t]));
      AddRow(g, static_cast<int64_t>(i), &dst, row, ts.row_elements);
    }
  }
  return grads;
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


// The arguments of chunk `c` of layer op `lo`, gathered from the state below.
std::vector<Tensor> GatherArgs(const LoomSpec& sp, const LayerOp& lo, const std::vector<std::vector<const char*>>& rows,
                               const Chunk& c) {
  const OpSpec& op = sp.ops[lo.op];
  std::vector<Tensor> args;
  args.reserve(op.inputs.size());
  for (size_t a = 0; a < op.inputs.size(); ++a) {
    const TypeShape& ts = sp.type_shapes[op.inputs[a]];
    Tensor batch(ts.dtype, ts.BatchDims(c.count));
    GatherRows(rows[op.inputs[a]], lo.args[a].data() + c.first, c.count, ts.row_bytes,
               static_cast<char*>(batch.raw_data()));
    args.push_back(std::move(batch));
  }
  return args;
}

// Runs layer op `lo` on its gathered arguments: a pass-through returns them.
// With `saved`, an op that has gradient functions runs for training and
// leaves there what its backward function reads.
std::vector<Tensor> RunLayerOp(const LoomRuntime& rt, const LayerOp& lo, int32_t d, const std::vector<Tensor>& args,
                               const std::vector<Tensor>& captures, std::vector<Tensor>* saved) {
  const LoomSpec& sp = *rt.spec();
  if (sp.ops[lo.op].pass_through) return args;
  try {
    if (saved && rt.differentiable(lo.op)) return rt.RunOpForTraining(lo.op, args, captures, saved);
    return rt.RunOp(lo.op, args, captures);
  } catch (const Error& err) {
    throw Error(err.code(), StrCat(err.what(), "\n\t [[in loom ", sp.DescribeOp(lo.op), " at depth ", d, "]]"));
  }
}

// A layer op's calls split for the threads: at most one chunk per thread,
// none smaller than kMinChunkCalls (below that, splitting costs more than
// it gains). An op without arguments is one chunk: its function decides
// its batch size.
constexpr int64_t kMinChunkCalls = 16;

std::vector<Chunk> SplitCalls(const LoomSpec& sp, const LayerOp& lo) {
  int64_t n = sp.ops[lo.op].inputs.empty() ? 1 : std::min<int64_t>(parallel::NumThreads(), lo.calls / kMinChunkCalls);
  n = std::max<int64_t>(n, 1);
  std::vector<Chunk> chunks(n);
  for (int64_t i = 0; i < n; ++i) {
    chunks[i].first = lo.calls * i / n;
    chunks[i].count = lo.calls * (i + 1) / n - chunks[i].first;
  }
  return chunks;
}

// Runs layer op `lo` at depth d chunk by chunk, in parallel: per chunk, its
// outputs. With `record`, it runs for training and records what the
// backward pass needs.
std::vector<std::vector<Tensor>> ForwardLayerOp(const LoomRuntime& rt, const LayerOp& lo, int32_t d,
                                                const std::vector<std::vector<const char*>>& rows,
                                                const std::vector<Tensor>& captures, LayerRecord* record) {
  const std::vector<Chunk> chunks = SplitCalls(*rt.spec(), lo);
  std::vector<std::vector<Tensor>> outs(chunks.size());
  if (record) {
    record->chunks = chunks;
    record->saved.assign(chunks.size(), {});
  }
  parallel::ParallelFor(static_cast<int>(chunks.size()), [&](int i) {
    outs[i] = RunLayerOp(rt, lo, d, GatherArgs(*rt.spec(), lo, rows, chunks[i]), captures,
                         record ? &record->saved[i] : nullptr);
  });
  return outs;
}

// The gradients of chunk `c`'s arguments and captures, given what its
// forward run saved and the gradient of this depth's state (`grads`, per
// type shape, undefined where zero); empty when no gradient reaches its
// outputs.
std::vector<Tensor> ChunkGrads(const LoomRuntime& rt, const LayerOp& lo, int32_t d, const Chunk& c,
                               const std::vector<Tensor>& saved, const std::vector<Tensor>& grads) {
  const LoomSpec& sp = *rt.spec();
  const OpSpec& op = sp.ops[lo.op];
  std::vector<Tensor> out_grads;
  bool any = false;
  for (size_t j = 0; j < op.outputs.size(); ++j) {
    const int t = op.outputs[j];
    const TypeShape& ts = sp.type_shapes[t];
    if (grads[t].defined() && IsFloating(ts.dtype)) {
      out_grads.push_back(RowView(grads[t], lo.output_rows[j] + c.first, c.count, ts));
      any = true;
    } else {
      out_grads.push_back(Zeros(ts.dtype, ts.BatchDims(c.count)));
    }
  }
  if (!any) return {};
  if (op.pass_through) return out_grads;
  if (!rt.differentiable(lo.op)) {
    ThrowInvalidArgument("no gradient is known for loom ", sp.DescribeOp(lo.op),
                         " (its batched function could not be differentiated)");
  }
  try {
    return rt.RunOpBackward(lo.op, saved, std::move(out_grads));
  } catch (const Error& err) {
    throw Error(err.code(), StrCat(err.what(), "\n\t [[in the gradient of loom ", sp.DescribeOp(lo.op),
                                   " at depth ", d, "]]"));
  }
}

// Per captured value, the gradients of every chunk at every depth, summed
// once at the end (SumCaptureGrads): one pass over them all instead of a
// read-modify-write of an accumulator for each.
using CaptureGrads = std::vector<std::vector<Tensor>>;

template <typename T>
void SumParts(const std::vector<Tensor>& parts, int64_t e0, int64_t e1, T* out) {
  std::copy(parts[0].data<T>() + e0, parts[0].data<T>() + e1, out + e0);
  for (size_t k = 1; k < parts.size(); ++k) {
    const T* p = parts[k].data<T>();
    for (int64_t e = e0; e < e1; ++e) out[e] += p[e];
  }
}

// The sum of each captured value's gradients (zeros where none flowed),
// blocks of elements shared among the threads.
std::vector<Tensor> SumCaptureGrads(const CaptureGrads& grads, const std::vector<Tensor>& captures) {
  std::vector<Tensor> sums;
  for (size_t c = 0; c < grads.size(); ++c) {
    const Tensor& v = captures[c];
    if (grads[c].empty()) {
      sums.push_back(Zeros(v.dtype(), v.shape()));
    } else if (grads[c].size() == 1) {
      sums.push_back(grads[c][0]);
    } else {
      Tensor sum(v.dtype(), v.shape());
      constexpr int64_t kBlock = 4096;  // elements: a block of every part stays in cache
      const int64_t n = sum.num_elements(), blocks = (n + kBlock - 1) / kBlock;
      parallel::ParallelFor(static_cast<int>(std::min<int64_t>(blocks, parallel::NumThreads())), [&](int i) {
        const int threads = static_cast<int>(std::min<int64_t>(blocks, parallel::NumThreads()));
        for (int64_t b = i; b < blocks; b += threads) {
          const int64_t e0 = b * kBlock, e1 = std::min(n, e0 + kBlock);
          if (sum.dtype() == DType::kFloat32) SumParts(grads[c], e0, e1, sum.data<float>());
          else SumParts(grads[c], e0, e1, sum.data<double>());
        }
      });
      sums.push_back(std::move(sum));
    }
  }
  return sums;
}

// dst row index[r] (row r when index is null) += src row r, for r < count:
// a piece of a layer's gradient accumulation.
struct RowAdd {
  const Tensor* src;
  Tensor* dst;
  const int32_t* index;
  int64_t count, row_elements;
};

template <typename T>
void AddRowSlice(const RowAdd& a, int64_t e0, int64_t e1) {
  const T* src = a.src->data<T>();
  T* dst = a.dst->data<T>();
  for (int64_t r = 0; r < a.count; ++r) {
    const T* s = src + r * a.row_elements;
    T* d = dst + (a.index ? a.index[r] : r) * a.row_elements;
    for (int64_t e = e0; e < e1; ++e) d[e] += s[e];
  }
}

// Runs the additions with each thread taking one slice of every row's
// elements, so that no two threads write one element (rows of different
// chunks may go to the same row below). `fresh` are the destinations just
// allocated: each thread zeroes its slice of them first.
void RunRowAdds(const std::vector<RowAdd>& adds, const std::vector<Tensor*>& fresh) {
  int64_t total = 0;
  for (const RowAdd& a : adds) total += a.count * a.row_elements;
  for (const Tensor* t : fresh) total += t->num_elements();
  constexpr int64_t kMinParallelElements = 1 << 16, kSliceAlign = 16;  // 64-byte slices of float rows
  const int n = total < kMinParallelElements ? 1 : parallel::NumThreads();
  auto slice_of = [n](int64_t row_elements, int i) {
    const int64_t slice = ((row_elements + n - 1) / n + kSliceAlign - 1) / kSliceAlign * kSliceAlign;
    return std::make_pair(std::min(row_elements, i * slice), std::min(row_elements, (i + 1) * slice));
  };
  parallel::ParallelFor(n, [&](int i) {
    for (Tensor* t : fresh) {
      const int64_t rows = t->dim(0), row_elements = rows ? t->num_elements() / rows : 0;
      const auto [e0, e1] = slice_of(row_elements, i);
      const size_t esize = DTypeSize(t->dtype());
      char* base = static_cast<char*>(t->raw_data());
      for (int64_t r = 0; r < rows && e1 > e0; ++r) {
        std::memset(base + (r * row_elements + e0) * esize, 0, static_cast<size_t>(e1 - e0) * esize);
      }
    }
    for (const RowAdd& a : adds) {
      const auto [e0, e1] = slice_of(a.row_elements, i);
      if (a.src->dtype() == DType::kFloat32) AddRowSlice<float>(a, e0, e1);
      else AddRowSlice<double>(a, e0, e1);
    }
  });
}

// Checks chunk `c`'s gradients (ChunkGrads), lists their additions into
// `below` (the state one depth down, allocated on first use with
// `rows_below` rows and listed in `fresh` to be zeroed), and adds the
// captures' to `capture_grads`.
void ListChunkGradAdds(const LoomRuntime& rt, const LayerOp& lo, const Chunk& c, const std::vector<Tensor>& grads,
                       const std::vector<Tensor>& captures, const std::vector<int64_t>& rows_below,
                       std::vector<Tensor>* below, CaptureGrads* capture_grads, std::vector<RowAdd>* adds,
                       std::vector<Tensor*>* fresh) {
  const LoomSpec& sp = *rt.spec();
  const OpSpec& op = sp.ops[lo.op];
  if (grads.empty()) return;
  for (int k = 0; k < (op.pass_through ? 0 : op.num_captures); ++k) {
    const Tensor& g = grads[op.inputs.size() + k];
    if (!g.defined() || !IsFloating(g.dtype())) continue;
    const Tensor& value = captures[rt.capture_offset(lo.op) + k];
    if (g.dtype() != value.dtype() || g.shape() != value.shape()) {
      ThrowInvalidArgument("the gradient of loom ", sp.DescribeOp(lo.op), " gave ", g.DebugString(),
                           " for its captured value ", k, ", which is ", value.DebugString());
    }
    (*capture_grads)[rt.capture_offset(lo.op) + k].push_back(g);
  }
  for (size_t a = 0; a < op.inputs.size(); ++a) {
    const int t = op.inputs[a];
    const TypeShape& ts = sp.type_shapes[t];
    if (!IsFloating(ts.dtype) || !grads[a].defined()) continue;
    if (!IsBatchOf(grads[a], ts, c.count)) {
      ThrowInvalidArgument("the gradient of loom ", sp.DescribeOp(lo.op), " gave ", grads[a].DebugString(),
                           " for argument ", a, "; expected a batch of ", c.count, " ", ts.ToString());
    }
    Tensor& g = (*below)[t];
    if (!g.defined()) {
      g = Tensor(ts.dtype, ts.BatchDims(rows_below[t]));
      fresh->push_back(&g);
    }
    adds->push_back({&grads[a], &g, lo.args[a].data() + c.first, c.count, ts.row_elements});
  }
}

// The backward pass of layer op `lo` at depth d from its forward run's
// record: the chunks' gradients, then their sums, in parallel.
void BackwardLayerOp(const LoomRuntime& rt, const LayerOp& lo, int32_t d, const LayerRecord& record,
                     const std::vector<Tensor>& captures, const std::vector<Tensor>& grads,
                     const std::vector<int64_t>& rows_below, std::vector<Tensor>* below,
                     CaptureGrads* capture_grads) {
  const size_t n = record.chunks.size();
  std::vector<std::vector<Tensor>> chunk_grads(n);
  parallel::ParallelFor(static_cast<int>(n), [&](int i) {
    chunk_grads[i] = ChunkGrads(rt, lo, d, record.chunks[i], record.saved[i], grads);
  });
  std::vector<RowAdd> adds;
  std::vector<Tensor*> fresh;
  for (size_t i = 0; i < n; ++i) {
    ListChunkGradAdds(rt, lo, record.chunks[i], chunk_grads[i], captures, rows_below, below, capture_grads, &adds,
                      &fresh);
  }
  RunRowAdds(adds, fresh);
}

// Depth 0's gradient, to the named tensors and batch inputs its rows came
// from: named tensors first (zeros where nothing flows), then per batch input
// its dense gradient, or with `sparse_batch` two tensors, the parts of an
// IndexedSlices: the rows of depth 0's gradient that came from it (values,
// in depth-0 order) and the batch rows they came from (int64 indices; a row
// read several times appears several times).
std::vector<Tensor> SourceGrads(const LoomSpec& sp, const Schedule& sc, const LoomInputs& in,
                                const std::vector<Tensor>& grads0, bool sparse_batch = false) {
  std::vector<Tensor> result;
  for (const Tensor& v : in.named) result.push_back(Zeros(v.dtype(), v.shape()));
  const size_t first_batch = result.size();
  if (!sparse_batch) {
    for (const Tensor& b : in.batch) result.push_back(Zeros(b.dtype(), b.shape()));
  }
  for (int t = 0; t < sp.num_type_shapes(); ++t) {
    const Tensor& g = grads0[t];
    const TypeShape& ts = sp.type_shapes[t];
    if (!g.defined() || !IsFloating(ts.dtype)) continue;
    const int slot = sp.batch_input_slot[t];
    for (int64_t i = 0; i < sc.rows[0][t]; ++i) {
      const int8_t kind = sc.source_kind[t][i];
      const int64_t index = sc.source_index[t][i];
      if (kind == kNamedTensorSource) AddRow(g, i, &result[index], 0, ts.row_elements);
      else if (kind == kBatchInputSource && !sparse_batch) {
        AddRow(g, i, &result[first_batch + slot], index, ts.row_elements);
      }
    }
  }
  if (!sparse_batch) return result;
  for (size_t slot = 0; slot < in.batch.size(); ++slot) {
    const int t = sp.batch_input_type_shapes[slot];
    const TypeShape& ts = sp.type_shapes[t];
    const Tensor& g = grads0[t];
    std::vector<int64_t> rows, indices;  // depth-0 rows from this batch input, and their batch rows
    if (g.defined() && IsFloating(ts.dtype)) {
      for (int64_t i = 0; i < sc.rows[0][t]; ++i) {
        if (sc.source_kind[t][i] != kBatchInputSource) continue;
        rows.push_back(i);
        indices.push_back(sc.source_index[t][i]);
      }
    }
    const int64_t n = static_cast<int64_t>(rows.size());
    Tensor values;
    if (n == sc.rows[0][t]) {
      values = g;  // every depth-0 row came from the batch input: the gradient is the values, in order
    } else {
      values = Tensor(ts.dtype, ts.BatchDims(n));
      char* dst = static_cast<char*>(values.raw_data());
      ParallelRows(n, ts.row_bytes, [&](int64_t first, int64_t end) {
        for (int64_t k = first; k < end; ++k) {
          std::memcpy(dst + k * ts.row_bytes, static_cast<const char*>(g.raw_data()) + rows[k] * ts.row_bytes,
                      ts.row_bytes);
        }
      });
    }
    Tensor index_tensor(DType::kInt64, Dims{n});
    if (n) std::memcpy(index_tensor.raw_data(), indices.data(), static_cast<size_t>(n) * sizeof(int64_t));
    result.push_back(std::move(values));
    result.push_back(std::move(index_tensor));
  }
  return result;
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

}  // namespace

std::vector<Tensor> RunForward(const std::shared_ptr<const LoomRuntime>& runtime,
                               const std::shared_ptr<const Schedule>& schedule, const LoomInputs& in,
                               ForwardRecord* record) {
  const LoomRuntime& rt = *runtime;
  const Schedule& sc = *schedule;
  const LoomSpec& sp = *rt.spec();
  CheckInputs(rt, sc, in);
  const int T = sp.num_type_shapes();

  // Outputs are copied out as soon as their depth is computed, so each
  // state can be released once the next depth has gathered from it.
  std::vector<Tensor> outputs(T);
  std::vector<std::vector<std::tuple<int, int32_t, int64_t>>> outputs_at(sc.num_depths + 1);  // (t, row, out)
  for (int t = 0; t < T; ++t) {
    const TypeShape& ts = sp.type_shapes[t];
    outputs[t] = Tensor(ts.dtype, ts.BatchDims(static_cast<int64_t>(sc.outputs[t].size())));
    for (size_t i = 0; i < sc.outputs[t].size(); ++i) {
      outputs_at[sc.outputs[t][i].first].emplace_back(t, sc.outputs[t][i].second, static_cast<int64_t>(i));
    }
  }
  // The state: per type shape, a pointer to each row, and the tensors holding
  // them (the op outputs themselves: no concatenation).
  std::vector<std::vector<const char*>> rows(T);
  std::vector<Tensor> held;
  for (int t = 0; t < T; ++t) {
    if (sc.rows[0][t] == 0) continue;
    held.push_back(InitialState(sp, sc, in, t));
    rows[t] = RowsOf(held.back(), sc.rows[0][t], sp.type_shapes[t].row_bytes);
  }
  auto copy_outputs = [&](int32_t d) {
    for (const auto& [t, row, out] : outputs_at[d]) {
      const size_t rb = sp.type_shapes[t].row_bytes;
      std::memcpy(static_cast<char*>(outputs[t].raw_data()) + out * rb, rows[t][row], rb);
    }
  };
  copy_outputs(0);
  if (record) {
    record->runtime = runtime;
    record->schedule = schedule;
    record->inputs = in;
    record->layers.resize(sc.num_depths);
  }
  for (int32_t d = 1; d <= sc.num_depths; ++d) {
    std::vector<std::vector<const char*>> next(T);
    for (int t = 0; t < T; ++t) next[t].resize(sc.rows[d][t]);
    std::vector<Tensor> next_held;
    const auto& layer = sc.layers[d - 1];
    if (record) record->layers[d - 1].resize(layer.size());
    for (size_t e = 0; e < layer.size(); ++e) {
      const LayerOp& lo = layer[e];
      const OpSpec& op = sp.ops[lo.op];
      LayerRecord* lr = record ? &record->layers[d - 1][e] : nullptr;
      std::vector<std::vector<Tensor>> outs = ForwardLayerOp(rt, lo, d, rows, in.captures, lr);
      const std::vector<Chunk> chunks = SplitCalls(sp, lo);
      for (size_t i = 0; i < outs.size(); ++i) {
        for (size_t j = 0; j < op.outputs.size(); ++j) {
          const int t = op.outputs[j];
          const size_t rb = sp.type_shapes[t].row_bytes;
          const char* p = static_cast<const char*>(outs[i][j].raw_data());
          const int64_t first = lo.output_rows[j] + chunks[i].first;
          for (int64_t c = 0; c < chunks[i].count; ++c) next[t][first + c] = p + c * rb;
          next_held.push_back(std::move(outs[i][j]));
        }
      }
    }
    rows = std::move(next);
    held = std::move(next_held);
    copy_outputs(d);
  }
  return outputs;
}

std::vector<Tensor> RunBackward(const ForwardRecord& record, const std::vector<Tensor>& output_grads) {
  const LoomRuntime& rt = *record.runtime;
  const Schedule& sc = *record.schedule;
  const LoomSpec& sp = *rt.spec();
  const int T = sp.num_type_shapes();
  // grads[d][t]: the gradient of the state at depth d (undefined: zero).
  std::vector<std::vector<Tensor>> grads = OutputGrads(sp, sc, sc.num_depths, output_grads);
  CaptureGrads capture_grads(rt.num_captures());
  for (int32_t d = sc.num_depths; d >= 1; --d) {
    const auto& layer = sc.layers[d - 1];
    for (size_t e = 0; e < layer.size(); ++e) {
      BackwardLayerOp(rt, layer[e], d, record.layers[d - 1][e], record.inputs.captures, grads[d], sc.rows[d - 1],
                      &grads[d - 1], &capture_grads);
    }
    grads[d].clear();  // this depth's gradients are spent
  }
  std::vector<Tensor> result = SourceGrads(sp, sc, record.inputs, grads[0], /*sparse_batch=*/true);
  for (Tensor& g : SumCaptureGrads(capture_grads, record.inputs.captures)) result.push_back(std::move(g));
  (void)T;
  return result;
}

// ---------------------------------------------------------------- unrolled

std::vector<Tensor> InitialStates(const LoomRuntime& rt, const Schedule& sc, const LoomInputs& in) {
  CheckInputs(rt, sc, in);
  std::vector<Tensor> states;
  for (int t = 0; t < rt.spec()->num_type_shapes(); ++t) states.push_back(InitialState(*rt.spec(), sc, in, t));
  return states;
}

std::vector<Tensor> RunLayer(const LoomRuntime& rt, const Schedule& sc, int32_t d, const std::vector<Tensor>& below,
                             const std::vector<Tensor>& captures) {
  const LoomSpec& sp = *rt.spec();
  const int T = sp.num_type_shapes();
  CheckState(sp, sc, d - 1, below, "LoomLayer");
  CheckCaptures(rt, captures);
  std::vector<Tensor> states(T);
  for (int t = 0; t < T; ++t) states[t] = Tensor(sp.type_shapes[t].dtype, sp.type_shapes[t].BatchDims(RowsAt(sc, d, t)));
  if (d > sc.num_depths) return states;
  std::vector<std::vector<const char*>> rows(T);
  for (int t = 0; t < T; ++t) rows[t] = RowsOf(below[t], RowsAt(sc, d - 1, t), sp.type_shapes[t].row_bytes);
  for (const LayerOp& lo : sc.layers[d - 1]) {
    const std::vector<Chunk> chunks = SplitCalls(sp, lo);
    std::vector<std::vector<Tensor>> outs = ForwardLayerOp(rt, lo, d, rows, captures, nullptr);
    for (size_t i = 0; i < outs.size(); ++i) {
      for (size_t j = 0; j < outs[i].size(); ++j) {
        const int t = sp.ops[lo.op].outputs[j];
        const size_t rb = sp.type_shapes[t].row_bytes;
        std::memcpy(static_cast<char*>(states[t].raw_data()) + (lo.output_rows[j] + chunks[i].first) * rb,
                    outs[i][j].raw_data(), outs[i][j].nbytes());
      }
    }
  }
  return states;
}

std::vector<Tensor> GatherOutputs(const LoomSpec& sp, const Schedule& sc, int32_t num_depths,
                                  const std::vector<Tensor>& states) {
  const int T = sp.num_type_shapes();
  if (static_cast<int64_t>(states.size()) != static_cast<int64_t>(num_depths + 1) * T) {
    ThrowInvalidArgument("LoomGatherOutputs: expected ", (num_depths + 1) * T, " states, got ", states.size());
  }
  if (sc.num_depths > num_depths) {
    ThrowInvalidArgument("the schedule is ", sc.num_depths, " deep, beyond the loom's max_depth of ", num_depths);
  }
  for (int32_t d = 0; d <= num_depths; ++d) {
    CheckState(sp, sc, d, std::vector<Tensor>(states.begin() + d * T, states.begin() + (d + 1) * T),
               "LoomGatherOutputs");
  }
  std::vector<Tensor> outputs(T);
  for (int t = 0; t < T; ++t) {
    const TypeShape& ts = sp.type_shapes[t];
    outputs[t] = Tensor(ts.dtype, ts.BatchDims(static_cast<int64_t>(sc.outputs[t].size())));
    char* dst = static_cast<char*>(outputs[t].raw_data());
    for (const auto& [d, row] : sc.outputs[t]) {
      std::memcpy(dst, static_cast<const char*>(states[d * T + t].raw_data()) + row * ts.row_bytes, ts.row_bytes);
      dst += ts.row_bytes;
    }
  }
  return outputs;
}

std::vector<Tensor> GatherOutputsGrad(const LoomSpec& sp, const Schedule& sc, int32_t num_depths,
                                      const std::vector<Tensor>& output_grads) {
  std::vector<std::vector<Tensor>> grads = OutputGrads(sp, sc, num_depths, output_grads);
  std::vector<Tensor> flat;
  for (int32_t d = 0; d <= num_depths; ++d) {
    for (int t = 0; t < sp.num_type_shapes(); ++t) {
      const TypeShape& ts = sp.type_shapes[t];
      flat.push_back(grads[d][t].defined() ? grads[d][t] : Zeros(ts.dtype, ts.BatchDims(RowsAt(sc, d, t))));
    }
  }
  return flat;
}

std::vector<Tensor> RunLayerGrad(const LoomRuntime& rt, const Schedule& sc, int32_t d, const std::vector<Tensor>& below,
                                 const std::vector<Tensor>& captures, const std::vector<Tensor>& grads) {
  const LoomSpec& sp = *rt.spec();
  const int T = sp.num_type_shapes();
  CheckState(sp, sc, d - 1, below, "LoomLayerGrad");
  CheckState(sp, sc, d, grads, "LoomLayerGrad (gradients)");
  CheckCaptures(rt, captures);
  std::vector<Tensor> below_grads(T);
  CaptureGrads capture_grads(rt.num_captures());
  if (d <= sc.num_depths) {
    std::vector<std::vector<const char*>> rows(T);
    for (int t = 0; t < T; ++t) rows[t] = RowsOf(below[t], RowsAt(sc, d - 1, t), sp.type_shapes[t].row_bytes);
    for (const LayerOp& lo : sc.layers[d - 1]) {
      // The unrolled mode keeps nothing between its steps: rerun the layer for training.
      LayerRecord record;
      ForwardLayerOp(rt, lo, d, rows, captures, &record);
      BackwardLayerOp(rt, lo, d, record, captures, grads, sc.rows[d - 1], &below_grads, &capture_grads);
    }
  }
  std::vector<Tensor> result;
  for (int t = 0; t < T; ++t) {
    const TypeShape& ts = sp.type_shapes[t];
    result.push_back(below_grads[t].defined() ? below_grads[t] : Zeros(ts.dtype, ts.BatchDims(RowsAt(sc, d - 1, t))));
  }
  for (Tensor& g : SumCaptureGrads(capture_grads, captures)) result.push_back(std::move(g));
  return result;
}

std::vector<Tensor> InitialStatesGrad(const LoomRuntime& rt, const Schedule& sc, const LoomInputs& in,
                                      const std::vector<Tensor>& grads0) {
  CheckState(*rt.spec(), sc, 0, grads0, "LoomInitialStateGrad");
  return SourceGrads(*rt.spec(), sc, in, grads0);
}

}  // namespace treadle::loom
