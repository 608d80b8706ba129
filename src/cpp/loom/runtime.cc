#include "loom/runtime.h"

#include <algorithm>
#include <cstring>

#include "graph/executable.h"
#include "graph/library.h"
#include "loom/layers.h"
#include "util/errors.h"

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

}  // namespace

// ---------------------------------------------------------------- runtime

std::shared_ptr<const LoomRuntime> LoomRuntime::FromLibrary(const proto::LoomMetadata& metadata,
                                                             std::shared_ptr<const graph::FunctionLibrary> library,
                                                             const proto::FunctionDefLibrary& written) {
  auto rt = std::shared_ptr<LoomRuntime>(new LoomRuntime());
  rt->spec_ = LoomSpec::FromProto(metadata);
  rt->library_ = std::move(library);
  rt->CheckFunctions();
  rt->CheckBodyFingerprints(written);
  return rt;
}

bool LoomRuntime::differentiable(int op) const { return spec_->ops[op].pass_through || backward_[op] >= 0; }

void LoomRuntime::CheckFunctions() {
  const LoomSpec& sp = *spec_;
  const graph::FunctionLibrary& lib = *library_;
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
    const size_t nin = op.num_function_args, nout = op.outputs.size();
    if (sig.inputs.size() != nin + op.num_captures || sig.outputs.size() != nout) {
      ThrowInvalidArgument(where, ": function '", op.function_name, "' takes ", sig.inputs.size(), " and returns ",
                           sig.outputs.size(), " values, but the op has ", nin, " arguments (",
                           nin - op.inputs.size(), " of them ragged inputs' row splits), ", op.num_captures,
                           " captures and ", nout, " outputs");
    }
    auto check = [&](const graph::TensorSpec& s, int ts, const char* what, size_t i) {
      const TypeShape& t = sp.type_shapes[ts];
      if (s.dtype != t.dtype || !FitsBatch(s.shape, t)) {
        ThrowInvalidArgument(where, ": ", what, " ", i, " of function '", op.function_name, "' is ",
                             DTypeName(s.dtype), " ", s.shape.ToString(), ", not a batch of ", t.ToString());
      }
    };
    for (size_t a = 0; a < op.inputs.size(); ++a) {
      const graph::TensorSpec& arg = sig.inputs[op.function_arg[a]];
      check(arg, op.inputs[a], "argument", op.function_arg[a]);
      if (!op.ragged[a]) continue;
      const graph::TensorSpec& splits = sig.inputs[op.function_arg[a] + 1];
      if (splits.dtype != DType::kInt64 || (splits.shape.known_rank && splits.shape.rank() != 1)) {
        ThrowInvalidArgument(where, ": argument ", op.function_arg[a] + 1, " of function '", op.function_name,
                             "' is ", DTypeName(splits.dtype), " ", splits.shape.ToString(),
                             ", not the int64 row splits of ragged input ", a);
      }
    }
    for (size_t j = 0; j < nout; ++j) check(sig.outputs[j], op.outputs[j], "result", j);
    for (size_t c = nin; c < sig.inputs.size(); ++c) capture_specs_.push_back(sig.inputs[c]);
    capture_offset_.push_back(capture_offset_.back() + op.num_captures);
    forward_.back() = f;
    if (!op.backward_function_name.empty()) CheckGradientFunctions(k);
  }
}

// Each op's body fingerprint (part of the loom's fingerprint, which
// schedules carry) must be that of the function it runs, or a schedule made
// for one loom could run on another whose ops compute something else.
void LoomRuntime::CheckBodyFingerprints(const proto::FunctionDefLibrary& library) const {
  for (int k = 0; k < spec_->num_ops(); ++k) {
    const OpSpec& op = spec_->ops[k];
    const uint64_t expected = op.pass_through ? 0 : FunctionBodyFingerprint(library, op.function_name);
    if (op.body_fingerprint != expected) {
      ThrowInvalidArgument("LoomDef: ", spec_->DescribeOp(k), " has body fingerprint ", op.body_fingerprint,
                           " but its function's is ", expected);
    }
  }
}

// The training function must return what the forward function returns and
// then intermediates; the backward function must take the listed output
// gradients and saved values and return the listed argument gradients.
void LoomRuntime::CheckGradientFunctions(int k) {
  const OpSpec& op = spec_->ops[k];
  const graph::FunctionLibrary& lib = *library_;
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
    if (!IsBatchOf(outs[j], ts, calls)) {
      ThrowInvalidArgument("loom ", spec_->DescribeOp(k), " returned ", outs[j].DebugString(), " as result ", j,
                           " for a batch of ", calls, " calls; expected a batch of ", ts.ToString());
    }
  }
}

std::vector<Tensor> LoomRuntime::RunChecked(int k, int function, int64_t calls, std::vector<Tensor>* args,
                                            const std::vector<Tensor>& captures) const {
  args->insert(args->end(), captures.begin() + capture_offset_[k], captures.begin() + capture_offset_[k + 1]);
  std::vector<Tensor> outs = library_->Compiled(function).Run(*args);
  CheckResults(k, calls, outs);
  return outs;
}

std::vector<Tensor> LoomRuntime::RunOp(int k, int64_t calls, std::vector<Tensor> args,
                                       const std::vector<Tensor>& captures) const {
  return RunChecked(k, forward_[k], calls, &args, captures);
}

std::vector<Tensor> LoomRuntime::RunOpForTraining(int k, int64_t calls, std::vector<Tensor> args,
                                                  const std::vector<Tensor>& captures,
                                                  std::vector<Tensor>* saved) const {
  std::vector<Tensor> outs = RunChecked(k, training_[k], calls, &args, captures);
  const size_t nfwd = args.size();
  saved->clear();
  for (int v : spec_->ops[k].backward_saved) {
    saved->push_back(static_cast<size_t>(v) < nfwd ? args[v] : outs[v - nfwd]);
  }
  outs.resize(spec_->ops[k].outputs.size());
  return outs;
}

std::vector<Tensor> LoomRuntime::RunOpBackward(int k, const std::vector<Tensor>& saved,
                                               std::vector<Tensor> output_grads) const {
  const OpSpec& op = spec_->ops[k];
  std::vector<Tensor> args;
  args.reserve(op.backward_output_gradients.size() + saved.size());
  for (int j : op.backward_output_gradients) args.push_back(std::move(output_grads[j]));
  args.insert(args.end(), saved.begin(), saved.end());
  std::vector<Tensor> results = library_->Compiled(backward_[k]).Run(args);
  std::vector<Tensor> grads(op.num_function_args + op.num_captures);  // undefined: no gradient
  for (size_t i = 0; i < results.size(); ++i) grads[op.backward_input_gradients[i]] = std::move(results[i]);
  return grads;
}

// ---------------------------------------------------------------- the loop over depths

std::vector<Tensor> RunForward(const std::shared_ptr<const LoomRuntime>& runtime,
                               const std::shared_ptr<const Schedule>& schedule, const LoomInputs& in,
                               ForwardRecord* record) {
  const LoomRuntime& rt = *runtime;
  const Schedule& sc = *schedule;
  const LoomSpec& sp = *rt.spec();
  CheckInputs(rt, sc, in);
  const int T = sp.num_type_shapes();

  // Outputs are copied out as soon as their depth is computed, so each
  // depth's tensors can be released once the last depth reading them has run.
  std::vector<Tensor> outputs(T);
  std::vector<std::vector<std::tuple<int, int32_t, int64_t>>> outputs_at(sc.num_depths + 1);  // (t, row, out)
  for (int t = 0; t < T; ++t) {
    const TypeShape& ts = sp.type_shapes[t];
    outputs[t] = Tensor(ts.dtype, ts.BatchDims(static_cast<int64_t>(sc.loop_outputs[t].size())));
    for (size_t i = 0; i < sc.loop_outputs[t].size(); ++i) {
      const auto [d, row] = sc.loop_outputs[t][i];
      outputs_at[d].emplace_back(t, row, static_cast<int64_t>(i));
    }
  }
  // The state of all depths (the loop mode's layout): per type shape, a
  // pointer to each row. Depth 0's rows are read where they lie, in the
  // inputs; a depth's rows are its op outputs themselves (no concatenation).
  std::vector<std::vector<const char*>> rows(T);
  for (int t = 0; t < T; ++t) {
    rows[t].resize(sc.loop_rows[t]);
    for (int64_t i = 0; i < sc.rows[0][t]; ++i) rows[t][i] = SourceRow(sp, sc, in, t, i);
  }
  std::vector<std::vector<Tensor>> held(sc.num_depths + 1);  // per depth, the tensors holding its rows
  std::vector<std::vector<int32_t>> release_after(sc.num_depths + 1);  // the depths last read by depth d
  for (int32_t d = 1; d <= sc.num_depths; ++d) release_after[sc.last_read[d]].push_back(d);
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
    const auto& layer = sc.layers[d - 1];
    if (record) record->layers[d - 1].resize(layer.size());
    for (size_t e = 0; e < layer.size(); ++e) {
      const LayerOp& lo = layer[e];
      const OpSpec& op = sp.ops[lo.op];
      if (op.pass_through) continue;  // its readers read the rows it lifts
      LayerRecord* lr = record ? &record->layers[d - 1][e] : nullptr;
      const std::vector<Chunk> chunks = SplitCalls(sp, lo);
      std::vector<std::vector<Tensor>> outs = ForwardLayerOp(rt, lo, d, chunks, rows, in.captures, lr, Layout::kLoop);
      for (size_t i = 0; i < outs.size(); ++i) {
        for (size_t j = 0; j < op.outputs.size(); ++j) {
          const int t = op.outputs[j];
          const size_t rb = sp.type_shapes[t].row_bytes;
          const char* p = static_cast<const char*>(outs[i][j].raw_data());
          const int64_t first = lo.loop_output_rows[j] + chunks[i].first;
          for (int64_t c = 0; c < chunks[i].count; ++c) rows[t][first + c] = p + c * rb;
          held[d].push_back(std::move(outs[i][j]));
        }
      }
    }
    copy_outputs(d);
    for (int32_t below : release_after[d]) held[below].clear();
  }
  return outputs;
}

std::vector<Tensor> RunBackward(const ForwardRecord& record, const std::vector<Tensor>& output_grads) {
  if (!record.schedule) {
    ThrowInvalidArgument("LoomRunGrad: the record is of a loom run that saved nothing for a backward pass (nothing ",
                         "was to read its record output when it ran: no gradient tape watched its inputs, or no ",
                         "node of its graph read the record)");
  }
  const LoomRuntime& rt = *record.runtime;
  const Schedule& sc = *record.schedule;
  const LoomSpec& sp = *rt.spec();
  // The gradient of every row of every depth, per type shape (undefined: zero).
  std::vector<Tensor> grads = LoopOutputGrads(sp, sc, output_grads);
  // reached[d][t]: has a gradient reached a row of type shape t computed at
  // depth d? A layer op none reaches is skipped, as if its gradient were
  // undefined (zero), instead of running its backward function on zeros.
  const int T = sp.num_type_shapes();
  std::vector<std::vector<char>> reached(sc.num_depths + 1, std::vector<char>(T, 0));
  for (int t = 0; t < T; ++t) {
    if (!grads[t].defined()) continue;
    for (const auto& [d, row] : sc.loop_outputs[t]) reached[d][t] = 1;
  }
  CaptureGrads capture_grads(rt.num_captures());
  std::vector<Tensor> grads_at(T);  // the gradient as the ops of one depth see it
  for (int32_t d = sc.num_depths; d >= 1; --d) {
    for (int t = 0; t < T; ++t) grads_at[t] = reached[d][t] ? grads[t] : Tensor();
    const auto& layer = sc.layers[d - 1];
    for (size_t e = 0; e < layer.size(); ++e) {
      const LayerOp& lo = layer[e];
      const OpSpec& op = sp.ops[lo.op];
      if (op.pass_through) continue;
      if (std::none_of(op.outputs.begin(), op.outputs.end(), [&](int t) { return reached[d][t] != 0; })) continue;
      BackwardLayerOp(rt, lo, d, record.layers[d - 1][e], record.inputs.captures, grads_at, sc.loop_rows, &grads,
                      &capture_grads, Layout::kLoop);
      for (size_t a = 0; a < op.inputs.size(); ++a) {
        if (!IsFloating(sp.type_shapes[op.inputs[a]].dtype)) continue;
        for (int32_t below : lo.source_depths[a]) reached[below][op.inputs[a]] = 1;
      }
    }
  }
  // Depth 0's rows come first.
  std::vector<Tensor> grads0(grads.size());
  for (size_t t = 0; t < grads.size(); ++t) {
    if (grads[t].defined()) grads0[t] = RowView(grads[t], 0, sc.rows[0][t], sp.type_shapes[t]);
  }
  grads.clear();
  std::vector<Tensor> result = SourceGrads(sp, sc, record.inputs, grads0, /*sparse_batch=*/true);
  for (Tensor& g : SumCaptureGrads(capture_grads, record.inputs.captures)) result.push_back(std::move(g));
  return result;
}

}  // namespace treadle::loom
