// Validation of nodes that call library functions (If, While, calls).
#pragma once

#include <vector>

#include "graph/graph_ir.h"

namespace treadle::graph {

class FunctionLibrary;

// For a node whose attrs name library functions: checks each function exists
// (NotFound otherwise) and, for the control-flow and call ops, that its
// signature fits the node (argument and result dtypes, argument shapes);
// records the callees and narrows the node's inferred output shapes with the
// result shapes the functions declare. `input_shapes` are the node's static
// input shapes.
void CheckFunctionCalls(const Body& body, Node* node, const std::vector<PartialShape>& input_shapes,
                        const FunctionLibrary& library);

// Does this attr value name library functions (a func, or a list of them)?
inline bool NamesFunctions(const AttrValue& value) {
  return std::holds_alternative<FuncRef>(value) || std::holds_alternative<std::vector<FuncRef>>(value);
}

}  // namespace treadle::graph
