// The backward pass's pieces: the gradients of a layer op's chunks (their
// backward functions on what the forward run saved), their sums into the
// state below and the captures' gradients, all on the thread pool, and the
// gradients that reach the loom's inputs from depth 0.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "loom/layers.h"
#include "ops/narrow_types.h"
#include "ops/kernels/simd/vec_kernels.h"
#include "util/cancel.h"
#include "util/errors.h"
#include "util/parallel.h"

namespace treadle::loom {
namespace {

// dst row dst_row += src row src_row (rows of row_elements floats or doubles).
void AddRow(const Tensor& src, int64_t src_row, Tensor* dst, int64_t dst_row, int64_t row_elements) {
  if (IsHalfFloat(src.dtype())) {  // float16, bfloat16: added in float32, rounded once
    AddHalfInto(src.dtype(), src.data<uint16_t>() + src_row * row_elements,
                 dst->data<uint16_t>() + dst_row * row_elements, row_elements);
  } else if (src.dtype() == DType::kFloat32) {
    const float* s = src.data<float>() + src_row * row_elements;
    float* d = dst->data<float>() + dst_row * row_elements;
    for (int64_t e = 0; e < row_elements; ++e) d[e] += s[e];
  } else {
    const double* s = src.data<double>() + src_row * row_elements;
    double* d = dst->data<double>() + dst_row * row_elements;
    for (int64_t e = 0; e < row_elements; ++e) d[e] += s[e];
  }
}

// The gradients of chunk `c`'s arguments and captures, given what its
// forward run saved and the gradient of this depth's state (`grads`, per
// type shape, undefined where zero); empty when no gradient reaches its
// outputs.
std::vector<Tensor> ChunkGrads(const LoomRuntime& rt, const LayerOp& lo, int32_t d, const Chunk& c,
                               const std::vector<Tensor>& saved, const std::vector<Tensor>& grads, Layout layout) {
  const LoomSpec& sp = *rt.spec();
  const OpSpec& op = sp.ops[lo.op];
  std::vector<Tensor> out_grads;
  bool any = false;
  for (size_t j = 0; j < op.outputs.size(); ++j) {
    const int t = op.outputs[j];
    const TypeShape& ts = sp.type_shapes[t];
    if (grads[t].defined() && IsFloating(ts.dtype)) {
      out_grads.push_back(RowView(grads[t], OutputRow(lo, j, layout) + c.first, c.count, ts));
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

template <typename T>
void SumParts(const std::vector<Tensor>& parts, int64_t e0, int64_t e1, T* out) {
  std::copy(parts[0].data<T>() + e0, parts[0].data<T>() + e1, out + e0);
  for (size_t k = 1; k < parts.size(); ++k) {
    const T* p = parts[k].data<T>();
    if constexpr (std::is_same_v<T, uint16_t>) {  // a 16-bit float
      AddHalfInto(parts[k].dtype(), p + e0, out + e0, e1 - e0);
    } else {
      for (int64_t e = e0; e < e1; ++e) out[e] += p[e];
    }
  }
}

// dst row index[r] (row r when index is null) += src row r, for r < count:
// a piece of a layer's gradient accumulation.
struct RowAdd {
  const Tensor* src;
  Tensor* dst;
  const int32_t* index;
  int64_t count, row_elements;
};

// d[e0:e1] += s[e0:e1] for each row, through the SIMD kernels.
template <typename T>
void AddRowSlice(const RowAdd& a, int64_t e0, int64_t e1) {
  const T* src = a.src->data<T>();
  T* dst = a.dst->data<T>();
  if constexpr (std::is_same_v<T, float>) {
    simd::AddRowsF32(dst, a.index, src, a.count, a.row_elements, e0, e1);  // all rows in one dispatched call
  } else {
    for (int64_t r = 0; r < a.count; ++r) {
      const T* s = src + r * a.row_elements + e0;
      T* d = dst + (a.index ? a.index[r] : r) * a.row_elements + e0;
      if constexpr (std::is_same_v<T, uint16_t>) AddHalfInto(a.src->dtype(), s, d, e1 - e0);
      else simd::BinaryF64(simd::Binary::kAdd, d, 1, s, 1, d, e1 - e0);
    }
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
  const int n = parallel::PartsFor(total, kMinParallelElements);
  parallel::ParallelFor(n, [&](int i) {
    for (Tensor* t : fresh) {
      const int64_t rows = t->dim(0), row_elements = rows ? t->num_elements() / rows : 0;
      const auto [e0, e1] = parallel::Part(row_elements, i, n, kSliceAlign);
      const size_t esize = DTypeSize(t->dtype());
      char* base = static_cast<char*>(t->raw_data());
      for (int64_t r = 0; r < rows && e1 > e0; ++r) {
        std::memset(base + (r * row_elements + e0) * esize, 0, static_cast<size_t>(e1 - e0) * esize);
      }
    }
    for (const RowAdd& a : adds) {
      const auto [e0, e1] = parallel::Part(a.row_elements, i, n, kSliceAlign);
      if (a.src->dtype() == DType::kFloat32) AddRowSlice<float>(a, e0, e1);
      else if (IsHalfFloat(a.src->dtype())) AddRowSlice<uint16_t>(a, e0, e1);
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
                       std::vector<Tensor*>* fresh, Layout layout) {
  const LoomSpec& sp = *rt.spec();
  const OpSpec& op = sp.ops[lo.op];
  if (grads.empty()) return;
  for (int k = 0; k < (op.pass_through ? 0 : op.num_captures); ++k) {
    const Tensor& g = grads[op.num_function_args + k];
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
    const Tensor& ga = grads[op.function_arg[a]];
    if (!IsFloating(ts.dtype) || !ga.defined()) continue;
    const ArgRows rows = ChunkArgRows(lo, a, c, layout);
    if (!IsBatchOf(ga, ts, rows.count)) {
      ThrowInvalidArgument("the gradient of loom ", sp.DescribeOp(lo.op), " gave ", ga.DebugString(),
                           " for argument ", a, "; expected a batch of ", rows.count, " ", ts.ToString());
    }
    Tensor& g = (*below)[t];
    if (!g.defined()) {
      g = Tensor(ts.dtype, ts.BatchDims(rows_below[t]));
      fresh->push_back(&g);
    }
    adds->push_back({&ga, &g, rows.index, rows.count, ts.row_elements});
  }
}

}  // namespace

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

std::vector<Tensor> LoopOutputGrads(const LoomSpec& sp, const Schedule& sc, const std::vector<Tensor>& output_grads) {
  const int T = sp.num_type_shapes();
  if (static_cast<int>(output_grads.size()) != T) {
    ThrowInvalidArgument("the loom's backward pass takes ", T, " output gradients, got ", output_grads.size());
  }
  std::vector<Tensor> grads(T);
  for (int t = 0; t < T; ++t) {
    const TypeShape& ts = sp.type_shapes[t];
    const Tensor& g = output_grads[t];
    if (g.defined() && !IsBatchOf(g, ts, static_cast<int64_t>(sc.loop_outputs[t].size()))) {
      ThrowInvalidArgument("the gradient of the loom's output of ", ts.ToString(), " must be a batch of ",
                           sc.loop_outputs[t].size(), ", got ", g.DebugString());
    }
    if (!g.defined() || !IsFloating(ts.dtype) || sc.loop_outputs[t].empty()) continue;
    grads[t] = Tensor(ts.dtype, ts.BatchDims(sc.loop_rows[t]));
    char* base = static_cast<char*>(grads[t].raw_data());
    ParallelRows(sc.loop_rows[t], ts.row_bytes, [&](int64_t first, int64_t end) {
      std::memset(base + first * ts.row_bytes, 0, static_cast<size_t>(end - first) * ts.row_bytes);
    });
    for (size_t i = 0; i < sc.loop_outputs[t].size(); ++i) {
      AddRow(g, static_cast<int64_t>(i), &grads[t], sc.loop_outputs[t][i].second, ts.row_elements);
    }
  }
  return grads;
}

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
      const int threads = static_cast<int>(std::min<int64_t>(blocks, parallel::NumThreads()));
      parallel::ParallelFor(threads, [&](int i) {
        for (int64_t b = i; b < blocks; b += threads) {
          const int64_t e0 = b * kBlock, e1 = std::min(n, e0 + kBlock);
          if (sum.dtype() == DType::kFloat32) SumParts(grads[c], e0, e1, sum.data<float>());
          else if (IsHalfFloat(sum.dtype())) SumParts(grads[c], e0, e1, sum.data<uint16_t>());
          else SumParts(grads[c], e0, e1, sum.data<double>());
        }
      });
      sums.push_back(std::move(sum));
    }
  }
  return sums;
}

void BackwardLayerOp(const LoomRuntime& rt, const LayerOp& lo, int32_t d, const LayerRecord& record,
                     const std::vector<Tensor>& captures, const std::vector<Tensor>& grads,
                     const std::vector<int64_t>& rows_below, std::vector<Tensor>* below,
                     CaptureGrads* capture_grads, Layout layout) {
  cancel::Check();
  const size_t n = record.chunks.size();
  std::vector<std::vector<Tensor>> chunk_grads(n);
  parallel::ParallelFor(static_cast<int>(n), [&](int i) {
    chunk_grads[i] = ChunkGrads(rt, lo, d, record.chunks[i], record.saved[i], grads, layout);
  });
  std::vector<RowAdd> adds;
  std::vector<Tensor*> fresh;
  for (size_t i = 0; i < n; ++i) {
    ListChunkGradAdds(rt, lo, record.chunks[i], chunk_grads[i], captures, rows_below, below, capture_grads, &adds,
                      &fresh, layout);
  }
  RunRowAdds(adds, fresh);
}

std::vector<Tensor> SourceGrads(const LoomSpec& sp, const Schedule& sc, const LoomInputs& in,
                                const std::vector<Tensor>& grads0, bool sparse_batch) {
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
    if (n > 0 && n == sc.rows[0][t]) {
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

}  // namespace treadle::loom
