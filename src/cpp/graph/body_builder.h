// Building the validated form of a graph or function body from protobuf.
#pragma once

#include <memory>

#include "graph/graph_ir.h"
#include "treadle/graph.pb.h"

namespace treadle::graph {

class FunctionLibrary;

// Validates `node_defs` into `body`, whose name and args are already set:
// every op registered, names unique, inputs naming existing nodes (or args)
// and outputs in range, no cycles, attrs typed and canonical, dtypes and
// shapes inferred in topological order with Const values known, and function
// attrs naming library functions whose signatures fit the call. Throws
// InvalidArgument (NotFound for an unknown op or function) naming the node.
void BuildNodes(const google::protobuf::RepeatedPtrField<proto::NodeDef>& node_defs, const FunctionLibrary& library,
                Body* body);

// Fills body->topo_order (producers before consumers; a graph already in
// order keeps it). Throws InvalidArgument naming a cycle's nodes.
void SortTopologically(Body* body);

// A library function's body: its signature's args, nodes, results (each
// output_arg's ret, checked against the declared dtype and shape) and
// control rets. Effects are resolved later, when the whole library is known.
std::shared_ptr<Body> BuildFunctionBody(const proto::FunctionDef& fdef, const FunctionLibrary& library);

// Resolves "node", "node:k" or an argument name of `body` to a TensorRef,
// checking the output index. `where` starts error messages.
TensorRef ResolveTensorName(const Body& body, const std::string& text, const std::string& where);

// "node 'x' (op Foo)" plus " in function 'f'" inside a function, for messages.
std::string NodeWhere(const Body& body, const Node& node);

}  // namespace treadle::graph
