// The validated, in-memory form of a graph or library function body: every
// op resolved, every input an index, attrs canonical, every output typed. The
// loader builds it from protobuf (trusting nothing); the planner and executor
// rely on its invariants.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ops/registry.h"

namespace treadle::graph {

// Where a value comes from: an output of a node, or an argument of the body.
struct TensorRef {
  enum class Kind : uint8_t { kNode, kArg };
  Kind kind = Kind::kNode;
  int index = -1;  // node index or argument index
  int output = 0;  // output number of the node (0 for arguments)

  static TensorRef Node(int node, int output) { return {Kind::kNode, node, output}; }
  static TensorRef Arg(int arg) { return {Kind::kArg, arg, 0}; }
  bool is_arg() const { return kind == Kind::kArg; }
};

// An argument or result: its name, dtype and (possibly partial) shape.
struct TensorSpec {
  std::string name;
  DType dtype = DType::kInvalid;
  PartialShape shape;
};

struct Node {
  std::string name;
  const OpDef* op = nullptr;
  std::vector<TensorRef> inputs;
  std::vector<int> control_inputs;  // node indices
  AttrMap attrs;                    // canonical: defaults filled in, types checked
  InferredOutputs outputs;          // static dtypes and (partial) shapes
  std::vector<int> callees;         // library function indices its func attrs name
  bool effectful = false;           // must run even when no output is used (set by the library)
  bool fed = false;                 // a Placeholder whose value the caller supplies
  bool shape_set = false;           // an output shape was narrowed by the user (Tensor.set_shape)
};

// A graph or function body. Nodes keep their GraphDef order; `topo_order`
// lists them so that every node comes after its data and control inputs.
struct Body {
  std::string function_name;  // empty for a top-level graph
  std::vector<TensorSpec> args;
  std::vector<Node> nodes;
  std::unordered_map<std::string, int> node_index;  // name -> index in `nodes`
  std::vector<int> topo_order;
  std::vector<TensorSpec> results;  // declared result specs (functions) or fetched ones (graphs)
  std::vector<TensorRef> rets;      // where each result comes from
  std::vector<int> control_rets;    // nodes that must run although no result needs them

  // "function 'f'" or "graph", for messages.
  std::string Describe() const { return function_name.empty() ? "graph" : "function '" + function_name + "'"; }
  DType StaticDType(TensorRef r) const {
    return r.is_arg() ? args[r.index].dtype : nodes[r.index].outputs.dtypes[r.output];
  }
  const PartialShape& StaticShape(TensorRef r) const {
    return r.is_arg() ? args[r.index].shape : nodes[r.index].outputs.shapes[r.output];
  }
};

}  // namespace treadle::graph
