#include "graph/graph_builder.h"

#include "graph/body_builder.h"
#include "graph/partial_values.h"
#include "graph/shape_merge.h"
#include "ops/shape_values.h"
#include "util/errors.h"

namespace treadle::graph {

namespace {

bool IsPlaceholder(const Node& node) { return node.op->name == "Placeholder"; }

// Constants up to this many elements are shared by value.
constexpr int64_t kSmallConstant = 16;

// dtype, shape and bytes of a small numeric or bool tensor; false for others.
bool ConstantKey(const Tensor& t, std::string* key) {
  const DType d = t.dtype();
  const bool numeric = d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kInt32 || d == DType::kInt64 ||
                       d == DType::kBool;
  if (!t.defined() || !numeric || t.num_elements() > kSmallConstant) return false;
  key->clear();
  key->push_back(static_cast<char>(d));
  key->push_back(static_cast<char>(t.shape().size()));
  key->append(reinterpret_cast<const char*>(t.shape().data()), t.shape().size() * sizeof(int64_t));
  key->append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return true;
}

}  // namespace

const Node& GraphBuilder::node(int index) const {
  if (index < 0 || index >= size()) ThrowInvalidArgument("graph: no node ", index, " (it has ", size(), ")");
  return nodes_[index];
}

template <typename Where>
void GraphBuilder::CheckRef(TensorRef r, const Where& where) const {
  if (!r.is_arg() && r.index >= 0 && r.index < size() && r.output >= 0 &&
      r.output < static_cast<int>(nodes_[r.index].outputs.dtypes.size())) {
    return;
  }
  if (r.is_arg()) ThrowInvalidArgument(where(), ": a traced graph's inputs are nodes, not arguments");
  const Node& src = node(r.index);
  const int outputs = static_cast<int>(src.outputs.dtypes.size());
  ThrowInvalidArgument(where(), " refers to '", src.name, ":", r.output, "' but '", src.name, "' has ", outputs,
                       " output", outputs == 1 ? "" : "s");
}

// The same rule as the front end always had: "x", then "x_1", "x_2", ...
// skipping names taken since (a node may itself be called "x_1").
std::string GraphBuilder::UniqueName(const std::string& requested) {
  std::string base = requested.empty() ? "node" : requested;
  for (char& c : base) if (c == '/') c = '_';
  auto it = names_.find(base);
  if (it == names_.end()) {
    names_.emplace(base, 1);
    return base;
  }
  for (int n = it->second;; ++n) {
    std::string candidate = base + "_" + std::to_string(n);
    if (names_.find(candidate) == names_.end()) {
      it->second = n + 1;  // `it` stays valid: no insertion since the find
      names_.emplace(candidate, 1);
      return candidate;
    }
  }
}

std::vector<PartialShape> GraphBuilder::Infer(Node* node) const {
  const size_t n = node->inputs.size();
  std::vector<DType> dtypes(n);
  std::vector<PartialShape> shapes(n);
  std::vector<const Tensor*> values(n, nullptr);
  std::vector<PartialShape> partial(n);  // what is known of the inputs' values
  for (size_t j = 0; j < n; ++j) {
    const TensorRef r = node->inputs[j];
    const Node& src = nodes_[r.index];
    dtypes[j] = src.outputs.dtypes[r.output];
    shapes[j] = src.outputs.shapes[r.output];
    if (src.op->name == "Const") values[j] = &src.attrs.GetTensor("value");
    partial[j] = partial_values_[r.index][r.output];
  }
  AttrMap given = std::move(node->attrs);
  node->attrs = CanonicalizeAttrs(*node->op, given, dtypes);
  {
    PartialValuesScope known(&shapes, &partial);  // for the shape functions that read shape operands
    node->outputs = InferOutputs(*node->op, dtypes, shapes, values, node->attrs);
  }
  return PartialOutputValues(*node, partial, shapes, values);
}

int GraphBuilder::AddNode(const std::string& base, const OpDef& op, std::vector<TensorRef> inputs,
                          const AttrMap& given, std::vector<int> control_inputs) {
  for (size_t j = 0; j < inputs.size(); ++j) CheckRef(inputs[j], [&] { return StrCat(op.name, " input ", j); });
  for (int c : control_inputs) node(c);
  Node added;
  added.op = &op;
  added.inputs = std::move(inputs);
  added.control_inputs = std::move(control_inputs);
  added.attrs = given;
  std::vector<PartialShape> partial = Infer(&added);  // throws before anything is added or named
  added.name = UniqueName(base);
  nodes_.push_back(std::move(added));
  partial_values_.push_back(std::move(partial));
  return size() - 1;
}

void GraphBuilder::ShareConstant(int index) {
  const Node& n = node(index);
  if (n.op->name != "Const") ThrowInvalidArgument("node '", n.name, "' is a ", n.op->name, " node, not a Const");
  std::string key;
  if (ConstantKey(n.attrs.GetTensor("value"), &key)) small_constants_.emplace(std::move(key), index);
}

int GraphBuilder::FindConstant(const Tensor& value) const {
  std::string key;
  if (!ConstantKey(value, &key)) return -1;
  auto it = small_constants_.find(key);
  return it == small_constants_.end() ? -1 : it->second;
}

void GraphBuilder::ReplaceNode(int index, std::vector<TensorRef> inputs, const AttrMap& given,
                               std::vector<int> control_inputs) {
  const Node& old = node(index);
  const std::string where = StrCat("node '", old.name, "' (op ", old.op->name, ")");
  for (size_t j = 0; j < inputs.size(); ++j) CheckRef(inputs[j], [&] { return StrCat(where, " input ", j); });
  for (int c : control_inputs) node(c);
  Node replaced;
  replaced.name = old.name;
  replaced.op = old.op;
  replaced.inputs = std::move(inputs);
  replaced.control_inputs = std::move(control_inputs);
  replaced.attrs = given;
  std::vector<PartialShape> partial = Infer(&replaced);
  nodes_[index] = std::move(replaced);
  partial_values_[index] = std::move(partial);
}

void GraphBuilder::RefineShape(int index, int output, const PartialShape& shape) {
  const Node& n = node(index);
  CheckRef(TensorRef::Node(index, output), [] { return std::string("set_shape"); });
  PartialShape& current = nodes_[index].outputs.shapes[output];
  std::optional<PartialShape> merged = MergeShapes(current, shape);
  if (!merged) {
    ThrowInvalidArgument("node '", n.name, "' output ", output, " has shape ", current.ToString(),
                         ", which is not compatible with ", shape.ToString());
  }
  current = std::move(*merged);
  nodes_[index].shape_set = true;
}

std::shared_ptr<const LibraryFunction> GraphBuilder::MakeFunction(const std::string& name,
                                                                  const std::vector<int>& order,
                                                                  const std::vector<int>& arg_nodes,
                                                                  const std::vector<TensorRef>& rets,
                                                                  const std::vector<TensorSpec>& result_specs,
                                                                  const std::vector<int>& control_rets,
                                                                  bool is_stateful) const {
  auto fn = std::make_shared<LibraryFunction>();
  auto body = std::make_shared<Body>();
  body->function_name = name;
  const std::string where = body->Describe();
  // Where each builder node went: an argument, a node of the body, or nowhere.
  constexpr int kAbsent = -1;
  std::vector<int> arg_of(nodes_.size(), kAbsent), node_of(nodes_.size(), kAbsent);
  for (int a : arg_nodes) {
    const Node& ph = node(a);
    if (!IsPlaceholder(ph)) ThrowInvalidArgument(where, ": argument '", ph.name, "' is not a Placeholder node");
    if (arg_of[a] != kAbsent) ThrowInvalidArgument(where, ": argument '", ph.name, "' is listed twice");
    arg_of[a] = static_cast<int>(body->args.size());
    body->args.push_back({ph.name, ph.outputs.dtypes[0], ph.outputs.shapes[0]});
  }
  for (int v : order) {
    const Node& n = node(v);
    if (IsPlaceholder(n)) continue;
    if (node_of[v] != kAbsent) ThrowInvalidArgument(where, ": node '", n.name, "' is listed twice");
    node_of[v] = static_cast<int>(body->nodes.size());
    body->nodes.push_back(n);
  }
  // `what()` names the reference, for the message (built only on error).
  auto map_ref = [&](TensorRef r, const auto& what) {
    if (arg_of[r.index] != kAbsent) return TensorRef::Arg(arg_of[r.index]);
    if (node_of[r.index] == kAbsent) {
      ThrowInvalidArgument(what(), " reads '", nodes_[r.index].name, "', which is neither a node nor an argument of ",
                           where);
    }
    return TensorRef::Node(node_of[r.index], r.output);
  };
  for (Node& n : body->nodes) {
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      n.inputs[j] = map_ref(n.inputs[j], [&] { return StrCat("node '", n.name, "' input ", j); });
    }
    std::vector<int> control;
    for (int c : n.control_inputs) {
      if (arg_of[c] != kAbsent) continue;  // arguments exist before any node runs
      auto what = [&] { return StrCat("node '", n.name, "' control input"); };
      control.push_back(map_ref(TensorRef::Node(c, 0), what).index);
    }
    n.control_inputs = std::move(control);
    n.callees.clear();
    n.effectful = false;
  }
  if (rets.size() != result_specs.size()) {
    ThrowInvalidArgument(where, " has ", rets.size(), " results but ", result_specs.size(), " result specs");
  }
  for (size_t k = 0; k < rets.size(); ++k) {
    auto what = [&] { return StrCat(where, " result ", k); };
    CheckRef(rets[k], what);
    TensorRef ref = map_ref(rets[k], what);
    const TensorSpec& spec = result_specs[k];
    if (body->StaticDType(ref) != spec.dtype) {
      ThrowInvalidArgument(where, " result '", spec.name, "' is declared ", DTypeName(spec.dtype), " but is ",
                           DTypeName(body->StaticDType(ref)));
    }
    if (!MergeShapes(spec.shape, body->StaticShape(ref))) {
      ThrowInvalidArgument(where, " result '", spec.name, "' is declared with shape ", spec.shape.ToString(),
                           " but has shape ", body->StaticShape(ref).ToString());
    }
    body->rets.push_back(ref);
    body->results.push_back(spec);
  }
  for (int c : control_rets) {
    node(c);
    if (arg_of[c] != kAbsent) continue;
    auto what = [&] { return StrCat(where, " control ret"); };
    body->control_rets.push_back(map_ref(TensorRef::Node(c, 0), what).index);
  }
  body->node_index.reserve(body->nodes.size());
  for (size_t i = 0; i < body->nodes.size(); ++i) {
    if (!body->node_index.emplace(body->nodes[i].name, static_cast<int>(i)).second) {
      ThrowInvalidArgument(where, ": duplicate node name '", body->nodes[i].name, "'");
    }
  }
  SortTopologically(body.get());
  fn->signature.name = name;
  fn->signature.inputs = body->args;
  fn->signature.outputs = body->results;
  fn->signature.is_stateful = is_stateful;
  fn->body = std::move(body);
  return fn;
}

}  // namespace treadle::graph
