// Shape operands whose values are partly known while a graph is built.
//
// TensorFlow's shape functions partially evaluate the tensor that names a
// shape: `ones(stack([shape(x)[0], 5]))` has shape (3, 5) when x has 3 rows,
// and (None, 5) when x's rows are unknown. The graph builder works out what
// it knows of small integer tensors (graph/partial_values.h) and makes it
// visible to the shape functions of the node it infers through
// PartialValuesScope; shape functions that consume a shape operand read it
// with ShapeOperand / PartialIntValues.
#pragma once

#include <optional>
#include <vector>

#include "ops/registry.h"

namespace treadle {

// For the lifetime of the scope (on this thread), the inference whose input
// shapes are `*shapes` sees `*partial` (one entry per input: the known
// elements of a scalar or vector integer input, kUnknownDim where an element
// is unknown; known_rank false where nothing is known). Any other inference
// (a nested one) sees nothing.
class PartialValuesScope {
 public:
  PartialValuesScope(const std::vector<PartialShape>* shapes, const std::vector<PartialShape>* partial);
  ~PartialValuesScope();
  PartialValuesScope(const PartialValuesScope&) = delete;
  PartialValuesScope& operator=(const PartialValuesScope&) = delete;

 private:
  const std::vector<PartialShape>* saved_shapes_;
  const std::vector<PartialShape>* saved_partial_;
};

// The elements of input i (an int32/int64 scalar or vector): all of them when
// its value is known, else those the graph builder worked out (kUnknownDim
// for the others), else nullopt.
std::optional<std::vector<int64_t>> PartialIntValues(const InferContext& c, int i);

// The (partial) shape that shape operand i names: its known elements, unknown
// where an element is unknown; of known rank when only its length is known.
// Throws when the operand is not a vector. Negative elements of a fully known
// operand are left to the caller's own checks (it sees them via IntValues).
PartialShape ShapeOperand(const InferContext& c, int i);

}  // namespace treadle
