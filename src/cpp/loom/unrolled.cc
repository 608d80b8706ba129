// The unrolled mode: one graph node per depth (see runtime.h).
#include <cstring>

#include "loom/layers.h"
#include "util/errors.h"

namespace treadle::loom {

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
    std::vector<std::vector<Tensor>> outs = ForwardLayerOp(rt, lo, d, chunks, rows, captures, nullptr, Layout::kBelow);
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
      ForwardLayerOp(rt, lo, d, SplitCalls(sp, lo), rows, captures, &record, Layout::kBelow);
      BackwardLayerOp(rt, lo, d, record, captures, grads, sc.rows[d - 1], &below_grads, &capture_grads,
                      Layout::kBelow);
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
