// What the graph builder knows of the values of small integer tensors (the
// tensors that name shapes) without running anything: a partial
// evaluation, as TensorFlow's shape inference does, through Const, Shape,
// Pack, ConcatV2, StridedSlice, Unpack, Identity and integer Casts.
//
// A partial value is a PartialShape used as a list of int64 elements: the
// elements of a scalar (one) or vector, kUnknownDim where an element is not
// known; known_rank false where nothing is known.
#pragma once

#include <vector>

#include "graph/graph_ir.h"

namespace treadle::graph {

// The partial values of the outputs of `node` (already inferred), given its
// inputs' partial values, static shapes and Const values (nullptr where none).
std::vector<PartialShape> PartialOutputValues(const Node& node, const std::vector<PartialShape>& inputs,
                                              const std::vector<PartialShape>& input_shapes,
                                              const std::vector<const Tensor*>& input_values);

}  // namespace treadle::graph
