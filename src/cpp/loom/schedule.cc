#include "loom/schedule.h"

#include <algorithm>
#include <cstring>

#include "util/errors.h"

namespace treadle::loom {
namespace {

// Fills the loop mode's layout (Schedule::loop_rows) of a schedule whose
// layers are laid out; `row` is each result's row in its depth's state.
void LayOutLoopMode(const LoomSpec& sp, const WeaverState& s, const std::vector<int32_t>& row, Schedule* out) {
  Schedule& sc = *out;
  const int T = sp.num_type_shapes(), K = sp.num_ops(), S = sp.num_arg_slots;
  const int32_t D = sc.num_depths;
  sc.loop_rows = sc.rows[0];
  std::vector<const LayerOp*> layer_op(static_cast<size_t>(D) * K, nullptr);
  for (int32_t d = 1; d <= D; ++d) {
    for (LayerOp& lo : sc.layers[d - 1]) {
      layer_op[static_cast<size_t>(d - 1) * K + lo.op] = &lo;
      if (sp.ops[lo.op].pass_through) continue;
      for (int t : sp.ops[lo.op].outputs) {
        lo.loop_output_rows.push_back(sc.loop_rows[t]);
        sc.loop_rows[t] += lo.calls;
      }
    }
  }
  // Each result's loop-mode row and the depth that computes it, depth by
  // depth, so that a pass-through's argument is resolved before it.
  const int64_t n = s.num_results();
  std::vector<int64_t> by_depth(D + 2, 0);
  for (int64_t i = 0; i < n; ++i) ++by_depth[s.depth[i] + 1];
  for (int32_t d = 0; d <= D; ++d) by_depth[d + 1] += by_depth[d];
  std::vector<int32_t> order(n);
  {
    std::vector<int64_t> next(by_depth.begin(), by_depth.end() - 1);
    for (int64_t i = 0; i < n; ++i) order[next[s.depth[i]]++] = static_cast<int32_t>(i);
  }
  std::vector<int32_t> loop_row(n), loop_depth(n);
  for (int32_t i : order) {
    const int32_t d = s.depth[i];
    if (d == 0) {
      loop_row[i] = row[i];
      loop_depth[i] = 0;
      continue;
    }
    const LayerOp& lo = *layer_op[static_cast<size_t>(d - 1) * K + s.op[i]];
    if (sp.ops[lo.op].pass_through) {
      const int32_t lifted = s.wiring[static_cast<size_t>(d - 1) * S + sp.arg_offset[lo.op]][s.position[i]];
      loop_row[i] = loop_row[lifted];
      loop_depth[i] = loop_depth[lifted];
    } else {
      loop_row[i] = static_cast<int32_t>(lo.loop_output_rows[s.output[i]] + s.position[i]);
      loop_depth[i] = d;
    }
  }
  sc.last_read.assign(D + 1, 0);
  for (int32_t d = 1; d <= D; ++d) {
    for (LayerOp& lo : sc.layers[d - 1]) {
      if (sp.ops[lo.op].pass_through) continue;
      const size_t nargs = lo.args.size();
      lo.sources.resize(nargs);
      lo.source_depths.resize(nargs);
      for (size_t a = 0; a < nargs; ++a) {
        const auto& w = s.wiring[static_cast<size_t>(d - 1) * S + sp.arg_offset[lo.op] + a];
        auto& src = lo.sources[a];
        auto& depths = lo.source_depths[a];
        src.resize(w.size());
        for (size_t c = 0; c < w.size(); ++c) {
          src[c] = loop_row[w[c]];
          if (depths.empty() || depths.back() != loop_depth[w[c]]) depths.push_back(loop_depth[w[c]]);
        }
        std::sort(depths.begin(), depths.end());
        depths.erase(std::unique(depths.begin(), depths.end()), depths.end());
        for (int32_t below : depths) sc.last_read[below] = d;  // d grows: the last write is the deepest
      }
    }
  }
  sc.loop_outputs.resize(T);
  for (int32_t r : s.outputs) sc.loop_outputs[s.type_shape[r]].emplace_back(loop_depth[r], loop_row[r]);
}

}  // namespace

std::shared_ptr<const Schedule> Finalize(const std::shared_ptr<const LoomSpec>& spec, const WeaverState& s) {
  auto out = std::make_shared<Schedule>();
  Schedule& sc = *out;
  const LoomSpec& sp = *spec;
  const int T = sp.num_type_shapes();
  const int K = sp.num_ops();
  const int S = sp.num_arg_slots;
  const int32_t D = s.deepest;
  sc.spec = spec;
  sc.num_depths = D;
  sc.num_results = s.num_results();
  sc.rows.assign(D + 1, std::vector<int64_t>(T, 0));
  sc.source_kind.resize(T);
  sc.source_index.resize(T);
  sc.batch_rows_needed.assign(T, 0);

  // Rows of each result in the state of its depth. At depth 0, in creation
  // order; above, op by op, output by output, call by call.
  const int64_t n = s.num_results();
  std::vector<int32_t> row(n);
  for (int64_t i = 0; i < n; ++i) {
    if (s.depth[i] != 0) continue;
    const int t = s.type_shape[i];
    row[i] = static_cast<int32_t>(sc.rows[0][t]++);
    sc.source_kind[t].push_back(static_cast<int8_t>(s.op[i]));
    sc.source_index[t].push_back(s.position[i]);
    if (s.op[i] == kBatchInputSource) sc.batch_rows_needed[t] = std::max(sc.batch_rows_needed[t], s.position[i] + 1);
  }
  sc.layers.resize(D);
  // first_row[(d-1)*K + k] -> per output j its first row; filled while laying out.
  std::vector<std::vector<int64_t>> first_row(static_cast<size_t>(D) * K);
  for (int32_t d = 1; d <= D; ++d) {
    for (int k = 0; k < K; ++k) {
      const int64_t calls = s.calls[static_cast<size_t>(d - 1) * K + k];
      if (calls == 0) continue;
      LayerOp lo;
      lo.op = k;
      lo.calls = calls;
      for (int t : sp.ops[k].outputs) {
        lo.output_rows.push_back(sc.rows[d][t]);
        sc.rows[d][t] += calls;
      }
      first_row[static_cast<size_t>(d - 1) * K + k] = lo.output_rows;
      sc.layers[d - 1].push_back(std::move(lo));
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if (s.depth[i] == 0) continue;
    row[i] = static_cast<int32_t>(first_row[static_cast<size_t>(s.depth[i] - 1) * K + s.op[i]][s.output[i]] +
                                  s.position[i]);
  }
  for (int32_t d = 1; d <= D; ++d) {
    for (LayerOp& lo : sc.layers[d - 1]) {
      const size_t nargs = sp.ops[lo.op].inputs.size();
      lo.args.resize(nargs);
      lo.splits.resize(nargs);
      for (size_t a = 0; a < nargs; ++a) {
        const size_t slot = static_cast<size_t>(d - 1) * S + sp.arg_offset[lo.op] + a;
        const auto& w = s.wiring[slot];
        auto& rows = lo.args[a];
        rows.resize(w.size());
        for (size_t c = 0; c < w.size(); ++c) rows[c] = row[w[c]];
        if (!sp.ops[lo.op].ragged[a]) continue;
        const auto& lengths = s.row_lengths[slot];
        auto& splits = lo.splits[a];
        splits.assign(1, 0);
        for (int32_t n : lengths) splits.push_back(splits.back() + n);
      }
    }
  }
  sc.constants.resize(T);
  for (int t = 0; t < T; ++t) {
    if (s.num_constants[t] == 0) continue;
    const TypeShape& ts = sp.type_shapes[t];
    Tensor c(ts.dtype, ts.BatchDims(s.num_constants[t]));
    std::memcpy(c.raw_data(), s.constants[t].data(), s.constants[t].size());
    sc.constants[t] = std::move(c);
  }
  sc.outputs.resize(T);
  for (int32_t r : s.outputs) sc.outputs[s.type_shape[r]].emplace_back(s.depth[r], row[r]);
  LayOutLoopMode(sp, s, row, &sc);
  return out;
}

}  // namespace treadle::loom
