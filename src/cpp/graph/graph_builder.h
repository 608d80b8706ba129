// The graph a Python function is traced into, held in the core's own form
// (graph_ir.h) while it is built: each node is inferred once, when it is
// added, and keeps its canonical attrs and inferred outputs. A finished
// function is a snapshot of it (a LibraryFunction) that libraries and
// Executables take as it is; protobuf is written only on request
// (graph_def_writer.h).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph_ir.h"
#include "graph/library.h"

namespace treadle::graph {

class GraphBuilder {
 public:
  // Adds a node named after `base` (made unique in this graph, TensorFlow's
  // way: "add", "add_1", ...). `inputs` are outputs of nodes already added
  // (TensorRef::Node), `control_inputs` node indices. Canonicalises the attrs
  // and infers the outputs from the producers' static dtypes, shapes and
  // Const values; on error nothing is added. Returns the node's index.
  int AddNode(const std::string& base, const OpDef& op, std::vector<TensorRef> inputs, const AttrMap& given,
              std::vector<int> control_inputs);
  // Re-types node `index` after a rewrite (gradients of control flow) gave
  // it new inputs and attrs; its name stays.
  void ReplaceNode(int index, std::vector<TensorRef> inputs, const AttrMap& given, std::vector<int> control_inputs);
  // Narrows output `output` of node `index` to `shape` (Tensor.set_shape);
  // InvalidArgument when they are incompatible.
  void RefineShape(int index, int output, const PartialShape& shape);

  // The Const node already holding a small numeric value equal to `value`
  // (same dtype, shape and bytes), or -1: tracing makes one node of `x * 0.5`
  // written a hundred times.
  int FindConstant(const Tensor& value) const;
  // Makes Const node `index` the one FindConstant gives for its value, if
  // small and no node holds that value yet.
  void ShareConstant(int index);

  int size() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int index) const;  // InvalidArgument when out of range

  // The nodes listed in `order` (each once) as function `name`: the
  // Placeholders `arg_nodes` become its arguments (other Placeholders may not
  // be used), `rets` (outputs of listed nodes) its results, declared with
  // `result_specs`, and `control_rets` run although no result needs them.
  std::shared_ptr<const LibraryFunction> MakeFunction(const std::string& name, const std::vector<int>& order,
                                                      const std::vector<int>& arg_nodes,
                                                      const std::vector<TensorRef>& rets,
                                                      const std::vector<TensorSpec>& result_specs,
                                                      const std::vector<int>& control_rets, bool is_stateful) const;

 private:
  // Canonicalises `node`'s attrs and infers its outputs; returns what is known
  // of their values (graph/partial_values.h).
  std::vector<PartialShape> Infer(Node* node) const;
  std::string UniqueName(const std::string& base);
  // Throws InvalidArgument unless `r` is an output of a node added already;
  // `where()` names the reference in the message (built only on error: it
  // was most of the cost of adding a node).
  template <typename Where>
  void CheckRef(TensorRef r, const Where& where) const;

  std::vector<Node> nodes_;
  // Per node, per output: the partially known value of a small integer
  // tensor (a shape being computed), read by the shape functions of the
  // nodes that consume it.
  std::vector<std::vector<PartialShape>> partial_values_;
  // Per name base, the next suffix to try; every name taken is a key too.
  std::unordered_map<std::string, int> names_;
  // Small numeric Const nodes shared by value (ConstantKey), the first of each.
  std::unordered_map<std::string, int> small_constants_;
};

}  // namespace treadle::graph
