// Combining partial shapes met along different paths of a graph.
#pragma once

#include <optional>

#include "tensor/shape.h"

namespace treadle::graph {

// The most specific shape that both `a` and `b` describe (their
// intersection), or nullopt when no tensor could have both shapes.
std::optional<PartialShape> MergeShapes(const PartialShape& a, const PartialShape& b);

// The most specific shape that covers both `a` and `b` (e.g. the result of a
// conditional whose branches give (2, 3) and (2, 4) is (2, None)).
PartialShape GeneralizeShapes(const PartialShape& a, const PartialShape& b);

// True when `narrow` says everything `wide` says and more (some dim or the
// rank is known in `narrow` only), so a value known to fit `wide` still needs
// checking against `narrow`.
bool IsMoreSpecific(const PartialShape& narrow, const PartialShape& wide);

}  // namespace treadle::graph
