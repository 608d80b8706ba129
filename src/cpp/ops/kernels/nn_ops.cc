// Neural-network ops: Softmax and LogSoftmax (along one axis, numerically
// stable), L2Loss, and SparseSoftmaxCrossEntropyWithLogits.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/narrow_types.h"
#include "ops/dispatch.h"
#include "ops/kernels/simd/vec_kernels.h"
#include "ops/op_helpers.h"

namespace treadle {
namespace {

// ---------------------------------------------------------------- Softmax

// Softmax (or log-softmax) over the middle dim of an [outer, n, inner] array.
// Sums accumulate in double: denominators stay accurate for long rows.
template <bool kLog, typename T>
void SoftmaxRows(const T* in, T* out, int64_t outer, int64_t n, int64_t inner) {
  if constexpr (std::is_same_v<T, float>) {
    if (inner == 1) return simd::SoftmaxRowsF32(in, out, outer, n, kLog);
  }
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) {
      const T* x = in + o * n;
      T* y = out + o * n;
      T max = -std::numeric_limits<T>::infinity();
      for (int64_t k = 0; k < n; ++k) max = std::max(max, x[k]);
      if (std::isinf(max)) max = 0;  // all -inf (or an inf): leave the arithmetic to say nan/0
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        T e = std::exp(x[k] - max);
        sum += e;
        if constexpr (!kLog) y[k] = e;
      }
      if constexpr (kLog) {
        // (x - max) - log(sum), not x - (max + log(sum)): the latter rounds
        // log(sum) away when max is large.
        const T log_sum = static_cast<T>(std::log(sum));
        for (int64_t k = 0; k < n; ++k) y[k] = (x[k] - max) - log_sum;
      } else {
        T scale = static_cast<T>(1.0 / sum);
        for (int64_t k = 0; k < n; ++k) y[k] *= scale;
      }
    }
    return;
  }
  // Strided: keep one running max and sum per inner position, walking rows
  // contiguously.
  std::vector<T> max(inner);
  std::vector<double> sum(inner);
  for (int64_t o = 0; o < outer; ++o) {
    const T* x = in + o * n * inner;
    T* y = out + o * n * inner;
    std::fill(max.begin(), max.end(), -std::numeric_limits<T>::infinity());
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t j = 0; j < inner; ++j) max[j] = std::max(max[j], x[k * inner + j]);
    }
    for (int64_t j = 0; j < inner; ++j) if (std::isinf(max[j])) max[j] = 0;
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t j = 0; j < inner; ++j) {
        T e = std::exp(x[k * inner + j] - max[j]);
        sum[j] += e;
        if constexpr (!kLog) y[k * inner + j] = e;
      }
    }
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t j = 0; j < inner; ++j) {
        if constexpr (kLog) y[k * inner + j] = (x[k * inner + j] - max[j]) - static_cast<T>(std::log(sum[j]));
        else y[k * inner + j] = static_cast<T>(y[k * inner + j] / sum[j]);
      }
    }
  }
}

template <bool kLog>
OpDef SoftmaxOp(const char* name) {
  OpDef op;
  op.name = name;
  op.inputs = {{"logits", false, "T", kFloatTypes}};
  op.outputs = {kLog ? "logsoftmax" : "softmax"};
  // TensorFlow's op works on the last axis only; `axis` (default -1) saves the
  // front end a transpose for the others.
  op.attrs = {{"axis", AttrType::kInt, AttrValue(int64_t{-1})}};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = [](const InferContext& c) {
    const PartialShape& s = c.shapes[0];
    if (s.known_rank) {
      if (s.rank() < 1) ThrowValueError(c.op.name, ": logits must have rank >= 1, got shape ", s.ToString());
      NormalizeAxis(c.op, c.attrs.GetInt("axis"), s.rank());
    }
    return std::vector<PartialShape>{s};
  };
  op.kernel = [name](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    int64_t axis = NormalizeAxis(ctx.op, ctx.attrs.GetInt("axis"), x.rank());
    Tensor& out = ctx.allocate_output(0);
    if (x.num_elements() == 0) return;
    int64_t outer = 1, inner = 1, n = x.dim(static_cast<int>(axis));
    for (int d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) inner *= x.dim(d);
    VisitFloat(x.dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      SoftmaxRows<kLog, T>(x.data<T>(), out.data<T>(), outer, n, inner);
    });
  };
  op.doc = kLog ? "log(softmax(logits)) along `axis`, computed without overflow."
                : "exp(logits) / sum(exp(logits)) along `axis`, computed without overflow.";
  return WithNarrowTypes(std::move(op), kHalfTypes);
}

OpRegistrar softmax_op(SoftmaxOp<false>("Softmax"));
OpRegistrar log_softmax_op(SoftmaxOp<true>("LogSoftmax"));

// ---------------------------------------------------------------- L2Loss

OpDef MakeL2Loss() {
  OpDef op;
  op.name = "L2Loss";
  op.inputs = {{"t", false, "T", kFloatTypes}};
  op.outputs = {"output"};
  op.dtype_fn = SameDTypeAsInput(0);
  op.shape_fn = ScalarShape();
  op.kernel = [](KernelContext& ctx) {
    const Tensor& t = ctx.input(0);
    Tensor& out = ctx.allocate_output(0);
    VisitFloat(t.dtype(), "L2Loss", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = t.data<T>();
      const int64_t n = t.num_elements();
      constexpr int kLanes = 8;  // independent partial sums vectorise
      double lanes[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes) {
        for (int l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(x[i + l]) * x[i + l];
      }
      for (; i < n; ++i) lanes[0] += static_cast<double>(x[i]) * x[i];
      double total = 0;
      for (double l : lanes) total += l;
      *out.data<T>() = static_cast<T>(total / 2);
    });
  };
  op.doc = "sum(t ** 2) / 2.";
  return WithNarrowTypes(std::move(op), kHalfTypes);
}

OpRegistrar l2_loss_op(MakeL2Loss());

// ------------------------------------------- SparseSoftmaxCrossEntropyWithLogits

template <typename Label>
void CheckLabels(const Label* labels, int64_t batch, int64_t classes) {
  for (int64_t i = 0; i < batch; ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      ThrowInvalidArgument("Received a label value of ", labels[i], " which is outside the valid range of [0, ",
                           classes, ").");
    }
  }
}

template <typename T, typename Label>
void SparseXent(const T* logits, const Label* labels, T* loss, T* backprop, int64_t batch, int64_t classes) {
  for (int64_t i = 0; i < batch; ++i) {
    const T* x = logits + i * classes;
    T* g = backprop + i * classes;
    T max = *std::max_element(x, x + classes);
    if (std::isinf(max)) max = 0;
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) {
      T e = std::exp(x[k] - max);
      g[k] = e;
      sum += e;
    }
    T scale = static_cast<T>(1.0 / sum);
    for (int64_t k = 0; k < classes; ++k) g[k] *= scale;
    const int64_t label = static_cast<int64_t>(labels[i]);
    g[label] -= T(1);
    // -log softmax[label] = log(sum) - (x[label] - max)
    loss[i] = static_cast<T>(std::log(sum) - (static_cast<double>(x[label]) - max));
  }
}

OpDef MakeSparseXent() {
  OpDef op;
  op.name = "SparseSoftmaxCrossEntropyWithLogits";
  op.inputs = {{"features", false, "T", kFloatTypes}, {"labels", false, "Tlabels", kIndexTypes}};
  op.outputs = {"loss", "backprop"};
  op.dtype_fn = [](const InferContext& c) { return std::vector<DType>{c.dtypes[0], c.dtypes[0]}; };
  // TensorFlow's op takes features [batch, classes] and labels [batch]; this
  // one also takes any leading batch shape: labels = features.shape[:-1].
  op.shape_fn = [](const InferContext& c) {
    const PartialShape& f = c.shapes[0];
    const PartialShape& l = c.shapes[1];
    if (f.known_rank && f.rank() == 0) {
      ThrowValueError(c.op.name, ": Logits cannot be scalars - received shape ", f.ToString(), ".");
    }
    if (f.known_rank && l.known_rank) {
      if (l.rank() != f.rank() - 1) {
        ThrowValueError(c.op.name, ": Rank mismatch: Rank of labels (received ", l.rank(),
                        ") should equal rank of logits minus 1 (received ", f.rank(), ").");
      }
      for (int d = 0; d < l.rank(); ++d) {
        if (l.dims[d] >= 0 && f.dims[d] >= 0 && l.dims[d] != f.dims[d]) {
          ThrowValueError(c.op.name, ": Shape mismatch: The shape of labels (received ", l.ToString(),
                          ") should equal the shape of logits except for the last dimension (received ",
                          f.ToString(), ").");
        }
      }
    }
    // Each of features and labels may know batch dims the other does not.
    PartialShape loss = PartialShape::Unknown(), backprop = f;
    if (f.known_rank) {
      loss = PartialShape(Dims(f.dims.begin(), f.dims.end() - 1));
      if (l.known_rank) {
        for (int d = 0; d < l.rank(); ++d) {
          if (loss.dims[d] < 0) loss.dims[d] = backprop.dims[d] = l.dims[d];
        }
      }
    } else if (l.known_rank) {
      loss = l;
    }
    return std::vector<PartialShape>{loss, backprop};
  };
  op.kernel = [](KernelContext& ctx) {
    const Tensor& f = ctx.input(0);
    const Tensor& labels = ctx.input(1);
    const int64_t classes = f.dim(f.rank() - 1);
    const int64_t batch = labels.num_elements();
    Tensor& loss = ctx.allocate_output(0, Dims(f.shape().begin(), f.shape().end() - 1));
    Tensor& backprop = ctx.allocate_output(1, f.shape());
    if (batch == 0) return;
    if (classes == 0) {
      ThrowInvalidArgument("Must have at least one class, but got logits shape ", DimsToString(f.shape()));
    }
    VisitFloat(f.dtype(), ctx.op.name.c_str(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      VisitInt(labels.dtype(), ctx.op.name.c_str(), [&](auto ltag) {
        using L = typename decltype(ltag)::type;
        CheckLabels(labels.data<L>(), batch, classes);  // before touching memory by label
        SparseXent(f.data<T>(), labels.data<L>(), loss.data<T>(), backprop.data<T>(), batch, classes);
      });
    });
  };
  op.doc = "Softmax cross-entropy of logits `features` against integer class `labels`; also returns its "
           "gradient with respect to the logits.";
  return WithNarrowTypes(std::move(op), kHalfTypes);
}

OpRegistrar sparse_xent_op(MakeSparseXent());

}  // namespace
}  // namespace treadle
