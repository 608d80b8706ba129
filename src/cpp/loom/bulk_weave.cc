// Bulk weaving: a whole forest of n-ary trees, or any DAG, in one call (see
// Weaver::WeaveGraph), and binary trees (WeaveTrees) as a special case of it.
// The description is checked completely first, so a bad one weaves nothing.
#include <algorithm>
#include <climits>

#include "loom/weaver.h"
#include "util/errors.h"

namespace treadle::loom {

void Weaver::CheckGraph(const GraphArgs& g) const {
  const LoomSpec& sp = *spec_;
  const int64_t n = g.num_nodes;
  if (n < 0 || n > kMaxResults) ThrowValueError("weave: ", n, " nodes is out of range [0, ", kMaxResults, "]");
  if (g.arg_splits[0] != 0) ThrowValueError("weave: arg_splits must start with 0, got ", g.arg_splits[0]);
  std::vector<int32_t> depth(n);
  std::vector<int64_t> counts;
  int64_t new_results = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int op = g.node_op[i];
    if (op < sp.num_type_shapes() || op >= sp.num_ops()) {
      ThrowValueError("weave: node ", i, " has op index ", op, ", which is not a named op of the loom");
    }
    const OpSpec& o = sp.ops[op];
    const int64_t begin = g.arg_splits[i], end = g.arg_splits[i + 1];
    if (end < begin) ThrowValueError("weave: arg_splits decreases at node ", i, " (", begin, " then ", end, ")");
    counts.assign(o.inputs.size(), 0);
    int32_t d = 1;
    for (int64_t e = begin; e < end; ++e) {
      const int32_t a = g.arg_input[e];
      if (a < 0 || a >= static_cast<int32_t>(o.inputs.size()) || (e > begin && a < g.arg_input[e - 1])) {
        ThrowValueError("weave: argument entry ", e, " of node ", i, " feeds input ", a, " of ", sp.DescribeOp(op),
                        "; a node's entries must feed its op's inputs (of which it has ", o.inputs.size(),
                        ") in order");
      }
      ++counts[a];
      const int64_t v = g.arg_value[e];
      int ts = o.inputs[a];
      switch (g.arg_source[e]) {
        case kArgNode: {
          if (v < 0 || v >= i) {
            ThrowValueError("weave: node ", i, " takes node ", v, " as an argument; children must be earlier nodes");
          }
          const OpSpec& child = sp.ops[g.node_op[v]];
          const int32_t out = g.arg_output[e];
          if (out < 0 || out >= static_cast<int32_t>(child.outputs.size())) {
            ThrowValueError("weave: node ", i, " takes output ", out, " of node ", v, ", whose ",
                            sp.DescribeOp(g.node_op[v]), " has ", child.outputs.size());
          }
          ts = child.outputs[out];
          d = std::max(d, depth[v] + 1);
          break;
        }
        case kArgBatchInput:
          if (sp.batch_input_slot[ts] < 0) {
            ThrowValueError("weave: node ", i, " reads a batch input of ", sp.type_shapes[ts].ToString(),
                            ", which the loom has not");
          }
          if (v < 0 || v > INT32_MAX) ThrowValueError("weave: node ", i, " reads batch input row ", v);
          ++new_results;
          break;
        case kArgConstant: {
          const TypeShape& t = sp.type_shapes[ts];
          if (t.row_elements != 1 || !t.shape.empty() || !(t.dtype == DType::kInt32 || t.dtype == DType::kInt64)) {
            ThrowTypeError("weave: node ", i, " takes a constant for input ", a, " of ", sp.DescribeOp(op),
                           ", which is ", t.ToString(), "; constants here are int32 or int64 scalars");
          }
          if (t.dtype == DType::kInt32 && (v < INT32_MIN || v > INT32_MAX)) {
            ThrowValueError("weave: node ", i, " takes the constant ", v, ", out of the range of int32");
          }
          ++new_results;
          break;
        }
        case kArgNamedTensor:
          if (v < 0 || v >= static_cast<int64_t>(sp.named_tensor_names.size())) {
            ThrowValueError("weave: node ", i, " takes named tensor ", v, ", out of range [0, ",
                            sp.named_tensor_names.size(), ")");
          }
          ts = sp.named_tensor_type_shapes[v];
          break;
        default:
          ThrowValueError("weave: argument entry ", e, " of node ", i, " has source ", g.arg_source[e],
                          "; sources are 0 (node), 1 (batch input), 2 (constant), 3 (named tensor)");
      }
      if (ts != o.inputs[a]) {
        ThrowTypeError("weave: node ", i, ": input ", a, " of ", sp.DescribeOp(op), " must be ",
                       sp.type_shapes[o.inputs[a]].ToString(), ", got ", sp.type_shapes[ts].ToString());
      }
    }
    for (size_t a = 0; a < o.inputs.size(); ++a) {
      if (!o.ragged[a] && counts[a] != 1) {
        ThrowTypeError("weave: node ", i, " gives ", counts[a], " arguments for input ", a, " of ",
                       sp.DescribeOp(op), ", which takes one");
      }
    }
    depth[i] = d;
    if (sp.max_depth > 0 && d > sp.max_depth) {
      ThrowValueError("weave: node ", i, " needs depth ", d, ", beyond the loom's max_depth of ", sp.max_depth);
    }
    if (d > kMaxDepth) ThrowValueError("weave: node ", i, " needs depth ", d, ", beyond the limit of ", kMaxDepth);
    new_results += static_cast<int64_t>(o.outputs.size());
  }
  if (s_.num_results() + new_results > kMaxResults) {
    ThrowValueError("weave: the schedule would hold more than ", kMaxResults, " results");
  }
  for (int64_t k = 0; k < g.num_outputs; ++k) {
    const int64_t node = g.output_node[k];
    if (node < 0 || node >= n) ThrowValueError("weave: output ", k, " is node ", node, ", out of range [0, ", n, ")");
    const int32_t j = g.output_index[k];
    if (j < 0 || j >= static_cast<int32_t>(sp.ops[g.node_op[node]].outputs.size())) {
      ThrowValueError("weave: output ", k, " is output ", j, " of node ", node, ", whose ",
                      sp.DescribeOp(g.node_op[node]), " has ", sp.ops[g.node_op[node]].outputs.size());
    }
  }
}

std::vector<int32_t> Weaver::WeaveGraph(const GraphArgs& g) {
  CheckGraph(g);
  const LoomSpec& sp = *spec_;
  std::vector<int32_t> first(g.num_nodes);
  std::vector<int32_t> flat, counts;
  for (int64_t i = 0; i < g.num_nodes; ++i) {
    const int op = g.node_op[i];
    const OpSpec& o = sp.ops[op];
    const bool ragged = o.has_ragged();  // otherwise one entry per input: no counts to keep
    flat.clear();
    if (ragged) counts.assign(o.inputs.size(), 0);
    for (int64_t e = g.arg_splits[i]; e < g.arg_splits[i + 1]; ++e) {
      const int32_t a = g.arg_input[e];
      const int64_t v = g.arg_value[e];
      const int ts = o.inputs[a];
      if (ragged) ++counts[a];
      switch (g.arg_source[e]) {
        case kArgNode: flat.push_back(first[v] + g.arg_output[e]); break;
        // A batch-input row CheckGraph has checked: the result without BatchInput's checks.
        case kArgBatchInput: flat.push_back(NewResult(0, ts, kBatchInputSource, 0, v)); break;
        case kArgConstant:
          if (sp.type_shapes[ts].dtype == DType::kInt32) {
            const int32_t v32 = static_cast<int32_t>(v);
            flat.push_back(Constants(ts, &v32, 1));
          } else {
            flat.push_back(Constants(ts, &v, 1));
          }
          break;
        default: flat.push_back(NamedTensor(static_cast<int>(v))); break;
      }
    }
    first[i] = AddCall(op, flat.data(), ragged ? counts.data() : nullptr);  // CheckGraph checked the arguments
  }
  for (int64_t k = 0; k < g.num_outputs; ++k) s_.outputs.push_back(first[g.output_node[k]] + g.output_index[k]);
  ++version_;
  return first;
}

std::vector<int32_t> Weaver::WeaveTrees(const TreesArgs& a) {
  const int K = spec_->num_ops();
  if (a.leaf_op < 0 || a.leaf_op >= K || a.node_op < 0 || a.node_op >= K) {
    ThrowValueError("weave_trees: leaf and node ops must be ops of the loom");
  }
  const OpSpec& leaf = spec_->ops[a.leaf_op];
  const OpSpec& node = spec_->ops[a.node_op];
  if (leaf.inputs.size() != 1 || leaf.inputs[0] != a.leaf_type_shape) {
    ThrowTypeError("weave_trees: the leaf op ", spec_->DescribeOp(a.leaf_op), " must take one value of ",
                   a.leaf_type_shape >= 0 && a.leaf_type_shape < spec_->num_type_shapes()
                       ? spec_->type_shapes[a.leaf_type_shape].ToString() : std::string("the leaf type shape"));
  }
  std::vector<int> children = leaf.outputs;
  children.insert(children.end(), leaf.outputs.begin(), leaf.outputs.end());
  if (node.inputs != children || node.outputs != leaf.outputs || node.has_ragged()) {
    ThrowTypeError("weave_trees: the node op ", spec_->DescribeOp(a.node_op),
                   " must take the leaf op's outputs for the left child, then for the right child, and return "
                   "values of the same type shapes");
  }
  for (int j : a.root_outputs) {
    if (j < 0 || j >= static_cast<int>(leaf.outputs.size())) {
      ThrowValueError("weave_trees: root output index ", j, " is out of range");
    }
  }
  // The trees as a graph: a leaf takes its value, a node its children's
  // outputs. The arrays are sized exactly first and filled in place (this
  // conversion is most of what weave_trees adds to the general call).
  const int64_t n = a.num_nodes;
  const int32_t width = static_cast<int32_t>(leaf.outputs.size());
  std::vector<int64_t> arg_splits(n + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t l = a.left[i], r = a.right[i];
    if ((l < 0) != (r < 0)) {
      ThrowValueError("weave_trees: node ", i, " has one child; children must be earlier nodes (or both -1 for a "
                      "leaf)");
    }
    arg_splits[i + 1] = arg_splits[i] + (l < 0 ? 1 : 2 * width);
  }
  const size_t entries = static_cast<size_t>(arg_splits[n]);
  std::vector<int32_t> node_op(n), arg_input(entries), arg_source(entries), arg_output(entries);
  std::vector<int64_t> arg_value(entries);
  const int32_t leaf_source = a.leaf_from_batch_input ? kArgBatchInput : kArgConstant;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t l = a.left[i], r = a.right[i];
    size_t e = static_cast<size_t>(arg_splits[i]);
    if (l < 0) {
      node_op[i] = a.leaf_op;
      arg_input[e] = 0;
      arg_source[e] = leaf_source;
      arg_value[e] = a.leaf_values[i];
      arg_output[e] = 0;
      continue;
    }
    node_op[i] = a.node_op;
    for (int32_t side = 0; side < 2; ++side) {
      for (int32_t j = 0; j < width; ++j, ++e) {
        arg_input[e] = side * width + j;
        arg_source[e] = kArgNode;
        arg_value[e] = side ? r : l;
        arg_output[e] = j;
      }
    }
  }
  std::vector<int64_t> output_node;
  std::vector<int32_t> output_index;
  for (int64_t i = 0; i < a.num_roots; ++i) {
    for (int j : a.root_outputs) {
      output_node.push_back(a.roots[i]);
      output_index.push_back(j);
    }
  }
  GraphArgs g;
  g.num_nodes = n;
  g.node_op = node_op.data();
  g.arg_splits = arg_splits.data();
  g.arg_input = arg_input.data();
  g.arg_source = arg_source.data();
  g.arg_value = arg_value.data();
  g.arg_output = arg_output.data();
  g.num_outputs = static_cast<int64_t>(output_node.size());
  g.output_node = output_node.data();
  g.output_index = output_index.data();
  return WeaveGraph(g);
}

}  // namespace treadle::loom
