#include "graph/partial_values.h"

#include <algorithm>
#include <optional>

namespace treadle::graph {

namespace {

// Partial values longer than this are not tracked (shapes have at most a few
// dozen elements; this keeps the work per node small).
constexpr size_t kMaxElements = 64;

bool IsIntDType(DType d) { return d == DType::kInt32 || d == DType::kInt64; }

// The elements of a small int32/int64 tensor of rank <= 1.
std::optional<Dims> ConstElements(const Tensor* t) {
  if (t == nullptr || !IsIntDType(t->dtype()) || t->rank() > 1 ||
      static_cast<size_t>(t->num_elements()) > kMaxElements) {
    return std::nullopt;
  }
  Dims out(t->num_elements());
  if (t->dtype() == DType::kInt32) {
    std::copy(t->data<int32_t>(), t->data<int32_t>() + out.size(), out.begin());
  } else {
    std::copy(t->data<int64_t>(), t->data<int64_t>() + out.size(), out.begin());
  }
  return out;
}

// The elements of input j: its partial value, else all unknown when its
// static shape says how many it has.
std::optional<Dims> Elements(const std::vector<PartialShape>& inputs, const std::vector<PartialShape>& shapes,
                             size_t j) {
  if (inputs[j].known_rank) return inputs[j].dims;
  const PartialShape& s = shapes[j];
  if (!s.known_rank || s.rank() > 1) return std::nullopt;
  if (s.rank() == 0) return Dims{kUnknownDim};
  if (s.dims[0] < 0 || static_cast<size_t>(s.dims[0]) > kMaxElements) return std::nullopt;
  return Dims(s.dims[0], kUnknownDim);
}

bool AnyKnown(const Dims& d) {
  return std::any_of(d.begin(), d.end(), [](int64_t v) { return v != kUnknownDim; });
}

PartialShape Known(Dims d) { return AnyKnown(d) ? PartialShape(std::move(d)) : PartialShape(); }

// Python's slice of a sequence of length n: the indices it selects.
std::optional<std::vector<int64_t>> SliceIndices(int64_t n, int64_t begin, int64_t end, int64_t stride,
                                                 bool begin_default, bool end_default) {
  if (stride == 0) return std::nullopt;
  auto clamp = [&](int64_t v, bool is_default, bool is_begin) {
    if (is_default) return stride > 0 ? (is_begin ? int64_t{0} : n) : (is_begin ? n - 1 : int64_t{-1});
    if (v < 0) v += n;
    if (stride > 0) return std::clamp<int64_t>(v, 0, n);
    return std::clamp<int64_t>(v, -1, n - 1);
  };
  const int64_t b = clamp(begin, begin_default, true), e = clamp(end, end_default, false);
  std::vector<int64_t> out;
  for (int64_t i = b; stride > 0 ? i < e : i > e; i += stride) out.push_back(i);
  return out;
}

PartialShape StridedSliceValue(const Node& node, const std::vector<PartialShape>& inputs,
                               const std::vector<PartialShape>& shapes,
                               const std::vector<const Tensor*>& values) {
  if (inputs.size() != 4 || !shapes[0].known_rank || shapes[0].rank() != 1) return {};
  const AttrMap& a = node.attrs;
  if (a.GetInt("ellipsis_mask") != 0 || a.GetInt("new_axis_mask") != 0) return {};
  std::optional<Dims> elems = Elements(inputs, shapes, 0);
  std::optional<Dims> begin = ConstElements(values[1]), end = ConstElements(values[2]),
                      strides = ConstElements(values[3]);
  if (!elems || !begin || !end || !strides || begin->size() != 1 || end->size() != 1 || strides->size() != 1) {
    return {};
  }
  const int64_t n = static_cast<int64_t>(elems->size());
  if (a.GetInt("shrink_axis_mask") & 1) {
    int64_t i = (*begin)[0] < 0 ? (*begin)[0] + n : (*begin)[0];
    if (i < 0 || i >= n) return {};  // the op's own shape function reports it
    return Known({(*elems)[i]});
  }
  auto indices = SliceIndices(n, (*begin)[0], (*end)[0], (*strides)[0], a.GetInt("begin_mask") & 1,
                              a.GetInt("end_mask") & 1);
  if (!indices) return {};
  Dims out;
  for (int64_t i : *indices) out.push_back((*elems)[i]);
  return Known(std::move(out));
}

PartialShape ConcatValue(const std::vector<PartialShape>& inputs, const std::vector<PartialShape>& shapes,
                         const std::vector<const Tensor*>& values) {
  const size_t n = inputs.size();
  std::optional<Dims> axis = ConstElements(values[n - 1]);
  if (!axis || axis->size() != 1 || ((*axis)[0] != 0 && (*axis)[0] != -1)) return {};
  Dims out;
  for (size_t j = 0; j + 1 < n; ++j) {
    if (!shapes[j].known_rank || shapes[j].rank() != 1) return {};
    std::optional<Dims> e = Elements(inputs, shapes, j);
    if (!e) return {};
    out.insert(out.end(), e->begin(), e->end());
  }
  if (out.size() > kMaxElements) return {};
  return Known(std::move(out));
}

PartialShape PackValue(const Node& node, const std::vector<PartialShape>& inputs,
                       const std::vector<PartialShape>& shapes) {
  if (node.attrs.GetInt("axis") != 0 || inputs.size() > kMaxElements) return {};
  Dims out;
  for (size_t j = 0; j < inputs.size(); ++j) {
    if (!shapes[j].known_rank || shapes[j].rank() != 0) return {};
    out.push_back(inputs[j].known_rank ? inputs[j].dims[0] : kUnknownDim);
  }
  return Known(std::move(out));
}

}  // namespace

std::vector<PartialShape> PartialOutputValues(const Node& node, const std::vector<PartialShape>& inputs,
                                              const std::vector<PartialShape>& input_shapes,
                                              const std::vector<const Tensor*>& input_values) {
  const std::vector<DType>& out_dtypes = node.outputs.dtypes;
  std::vector<PartialShape> out(out_dtypes.size());
  if (out.empty() || !IsIntDType(out_dtypes[0])) return out;
  const std::string& op = node.op->name;
  if (op == "Const") {
    std::optional<Dims> e = ConstElements(&node.attrs.GetTensor("value"));
    if (e) out[0] = PartialShape(std::move(*e));
  } else if (op == "Shape") {
    const PartialShape& s = input_shapes[0];
    if (s.known_rank && static_cast<size_t>(s.rank()) <= kMaxElements) out[0] = Known(s.dims);
  } else if (op == "Identity" || op == "StopGradient" || op == "Snapshot") {
    out[0] = inputs[0];
  } else if (op == "Cast") {
    if (!input_shapes.empty() && IsIntDType(node.outputs.dtypes[0]) && inputs[0].known_rank) out[0] = inputs[0];
  } else if (op == "Pack") {
    out[0] = PackValue(node, inputs, input_shapes);
  } else if (op == "ConcatV2") {
    out[0] = ConcatValue(inputs, input_shapes, input_values);
  } else if (op == "StridedSlice") {
    out[0] = StridedSliceValue(node, inputs, input_shapes, input_values);
  } else if (op == "Unpack") {
    std::optional<Dims> e = input_shapes[0].known_rank && input_shapes[0].rank() == 1
                                ? Elements(inputs, input_shapes, 0)
                                : std::nullopt;
    if (e && e->size() == out.size() && node.attrs.GetInt("axis") == 0) {
      for (size_t k = 0; k < out.size(); ++k) {
        if ((*e)[k] != kUnknownDim) out[k] = PartialShape(Dims{(*e)[k]});
      }
    }
  }
  return out;
}

}  // namespace treadle::graph
