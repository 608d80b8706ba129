#include "ops/shape_values.h"

#include "util/errors.h"

namespace treadle {

namespace {

// The inference PartialValuesScope speaks for (identified by its input
// shapes vector) and what it knows of that inference's inputs.
thread_local const std::vector<PartialShape>* g_shapes = nullptr;
thread_local const std::vector<PartialShape>* g_partial = nullptr;

}  // namespace

PartialValuesScope::PartialValuesScope(const std::vector<PartialShape>* shapes,
                                       const std::vector<PartialShape>* partial)
    : saved_shapes_(g_shapes), saved_partial_(g_partial) {
  g_shapes = shapes;
  g_partial = partial;
}

PartialValuesScope::~PartialValuesScope() {
  g_shapes = saved_shapes_;
  g_partial = saved_partial_;
}

std::optional<std::vector<int64_t>> PartialIntValues(const InferContext& c, int i) {
  if (c.value(i) != nullptr) return c.IntValues(i);
  if (g_partial == nullptr || g_shapes != &c.shapes || i >= static_cast<int>(g_partial->size())) return std::nullopt;
  const PartialShape& p = (*g_partial)[i];
  if (!p.known_rank) return std::nullopt;
  return std::vector<int64_t>(p.dims.begin(), p.dims.end());
}

PartialShape ShapeOperand(const InferContext& c, int i) {
  const PartialShape& operand = c.shapes[i];
  if (operand.known_rank && operand.rank() != 1) {
    ThrowValueError(c.op.name, ": the shape operand must be a vector, got a tensor of shape ", operand.ToString());
  }
  std::optional<std::vector<int64_t>> values = PartialIntValues(c, i);
  if (values) {
    Dims dims(values->begin(), values->end());
    for (int64_t& d : dims) {
      if (d < 0) d = kUnknownDim;
    }
    return PartialShape(std::move(dims));
  }
  if (operand.known_rank && operand.dims[0] >= 0) return PartialShape::UnknownOfRank(static_cast<int>(operand.dims[0]));
  return PartialShape::Unknown();
}

}  // namespace treadle
