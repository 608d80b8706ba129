#include "graph/body_builder.h"

#include <algorithm>

#include "graph/attr_proto.h"
#include "graph/call_checks.h"
#include "graph/input_ref.h"
#include "graph/library.h"
#include "graph/shape_merge.h"
#include "util/errors.h"

namespace treadle::graph {

namespace {

using NodeDefs = google::protobuf::RepeatedPtrField<proto::NodeDef>;

std::string InBody(const Body& body) { return body.function_name.empty() ? "" : " in " + body.Describe(); }

int FindArg(const Body& body, std::string_view name) {
  for (size_t i = 0; i < body.args.size(); ++i) {
    if (body.args[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// Names, ops and the name -> index map. Duplicates (among nodes, or with an
// argument) and unregistered ops are rejected here.
void IndexNodes(const NodeDefs& defs, Body* body) {
  body->nodes.resize(defs.size());
  body->node_index.reserve(defs.size());
  for (int i = 0; i < defs.size(); ++i) {
    const proto::NodeDef& nd = defs[i];
    Node& node = body->nodes[i];
    if (!IsValidName(nd.name())) {
      ThrowInvalidArgument(body->Describe(), ": node ", i, " has an invalid name '", nd.name(),
                           "' (a name is non-empty and has no ':' and no leading '^')");
    }
    if (FindArg(*body, nd.name()) >= 0 || !body->node_index.emplace(nd.name(), i).second) {
      ThrowInvalidArgument(body->Describe(), ": duplicate node name '", nd.name(), "'");
    }
    node.name = nd.name();
    node.op = OpRegistry::Global().Find(nd.op());
    if (!node.op) {
      throw Error(Code::kNotFound,
                  StrCat("Op type not registered '", nd.op(), "' in node '", nd.name(), "'", InBody(*body)));
    }
  }
}

// Input strings -> TensorRefs and control edges. Output indices are checked
// later, once the producer's output count is known.
void ResolveInputs(const NodeDefs& defs, Body* body) {
  for (int i = 0; i < defs.size(); ++i) {
    Node& node = body->nodes[i];
    const auto& inputs = defs[i].input();
    for (int j = 0; j < inputs.size(); ++j) {
      std::string where = StrCat("node '", node.name, "' input ", j);
      ParsedInput p = ParseInput(inputs[j], where);
      auto it = body->node_index.find(p.name);
      if (p.control) {
        // Arguments exist before any node runs: waiting for one is a no-op.
        if (it == body->node_index.end() && FindArg(*body, p.name) >= 0) continue;
        if (it == body->node_index.end()) {
          ThrowInvalidArgument(where, " '", inputs[j], "' is a control dependency on '", p.name,
                               "', which is not a node of the ", body->Describe());
        }
        node.control_inputs.push_back(it->second);
        continue;
      }
      if (it != body->node_index.end()) {
        node.inputs.push_back(TensorRef::Node(it->second, p.output));
        continue;
      }
      int arg = FindArg(*body, p.name);
      if (arg < 0) {
        ThrowInvalidArgument(where, " refers to '", inputs[j], "', which is not a node",
                             body->function_name.empty() ? "" : " or an argument", " of the ", body->Describe());
      }
      if (p.output != 0) {
        ThrowInvalidArgument(where, " refers to '", inputs[j], "' but argument '", p.name, "' has 1 output");
      }
      node.inputs.push_back(TensorRef::Arg(arg));
    }
  }
}

[[noreturn]] void ThrowCycle(const Body& body, const std::vector<std::pair<int, int>>& stack, int again) {
  std::string path;
  bool on_cycle = false;
  for (const auto& frame : stack) {
    if (frame.first == again) on_cycle = true;
    if (on_cycle) path += "'" + body.nodes[frame.first].name + "' -> ";
  }
  path += "'" + body.nodes[again].name + "'";
  ThrowInvalidArgument(body.Describe(), " has a cycle through node '", body.nodes[again].name, "': ", path,
                       " (each node takes an input from the next)");
}

}  // namespace

// Depth-first post-order over inputs: producers come before consumers, and a
// graph already in topological order keeps its order. Iterative, so a long
// chain of nodes cannot exhaust the native stack.
void SortTopologically(Body* body) {
  const int n = static_cast<int>(body->nodes.size());
  std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the stack, 2 done
  std::vector<std::pair<int, int>> stack;  // (node, next edge to follow)
  body->topo_order.reserve(n);
  for (int root = 0; root < n; ++root) {
    if (state[root]) continue;
    state[root] = 1;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      const int v = stack.back().first;
      const int edge = stack.back().second++;
      const Node& node = body->nodes[v];
      const int num_data = static_cast<int>(node.inputs.size());
      if (edge < num_data + static_cast<int>(node.control_inputs.size())) {
        int u = -1;
        if (edge < num_data) {
          if (!node.inputs[edge].is_arg()) u = node.inputs[edge].index;
        } else {
          u = node.control_inputs[edge - num_data];
        }
        if (u < 0 || state[u] == 2) continue;
        if (state[u] == 1) ThrowCycle(*body, stack, u);
        state[u] = 1;
        stack.push_back({u, 0});
      } else {
        state[v] = 2;
        body->topo_order.push_back(v);
        stack.pop_back();
      }
    }
  }
}

namespace {

// The attrs a NodeDef gives, typed by the op's AttrDefs. Attrs the op does not
// define are an error, except internal ones ("_...") and type attrs of inputs
// ("T"), which the core infers: those must agree with the input dtypes.
AttrMap AttrsFromNodeDef(const proto::NodeDef& nd, const OpDef& op, const std::vector<DType>& dtypes,
                         const std::string& where) {
  AttrMap given;
  for (const AttrDef& def : op.attrs) {
    auto it = nd.attr().find(def.name);
    if (it != nd.attr().end()) {
      given.Set(def.name, AttrFromProto(it->second, def.type, StrCat(where, " attr '", def.name, "'")));
    }
  }
  std::vector<std::string> extra;
  for (const auto& kv : nd.attr()) {
    if (!op.FindAttr(kv.first)) extra.push_back(kv.first);
  }
  std::sort(extra.begin(), extra.end());  // report the same one every time
  const int n = static_cast<int>(dtypes.size());
  for (const std::string& name : extra) {
    if (!name.empty() && name[0] == '_') continue;
    int arg = -1;
    for (size_t a = 0; a < op.inputs.size(); ++a) {
      if (op.inputs[a].type_attr == name) {
        arg = static_cast<int>(a);
        break;
      }
    }
    if (arg < 0) ThrowInvalidArgument(where, ": op ", op.name, " has no attr '", name, "'");
    std::string attr_where = StrCat(where, " attr '", name, "'");
    DType t = std::get<DType>(AttrFromProto(nd.attr().at(name), AttrType::kType, attr_where));
    auto [begin, end] = ArgRange(op, arg, n);
    if (begin >= 0 && begin < end && end <= n && dtypes[begin] != t) {
      ThrowInvalidArgument(attr_where, " is ", DTypeName(t), " but input '", op.inputs[arg].name, "' is ",
                           DTypeName(dtypes[begin]));
    }
  }
  return given;
}

// Types the node's inputs, canonicalises its attrs and infers its outputs.
void InferNode(const proto::NodeDef& nd, const FunctionLibrary& library, Body* body, int index) {
  Node& node = body->nodes[index];
  const OpDef& op = *node.op;
  const std::string where = NodeWhere(*body, node);
  const size_t n = node.inputs.size();
  std::vector<DType> dtypes(n);
  std::vector<PartialShape> shapes(n);
  std::vector<const Tensor*> values(n, nullptr);
  for (size_t j = 0; j < n; ++j) {
    const TensorRef ref = node.inputs[j];
    if (!ref.is_arg()) {
      const Node& src = body->nodes[ref.index];
      const size_t outputs = src.outputs.dtypes.size();
      if (static_cast<size_t>(ref.output) >= outputs) {
        ThrowInvalidArgument("node '", node.name, "' input ", j, " refers to '", src.name, ":", ref.output,
                             "' but '", src.name, "' has ", outputs, " output", outputs == 1 ? "" : "s",
                             InBody(*body));
      }
      if (src.op->name == "Const") values[j] = &src.attrs.GetTensor("value");
    }
    dtypes[j] = body->StaticDType(ref);
    shapes[j] = body->StaticShape(ref);
  }
  AttrMap given = AttrsFromNodeDef(nd, op, dtypes, where);
  try {
    node.attrs = CanonicalizeAttrs(op, given, dtypes);
    node.outputs = InferOutputs(op, dtypes, shapes, values, node.attrs);
  } catch (const StaticError& e) {
    ThrowInvalidArgument(where, ": ", e.what());
  } catch (const Error& e) {
    throw Error(e.code(), StrCat(where, ": ", e.what()));
  }
  CheckFunctionCalls(*body, &node, shapes, library);
}

}  // namespace

std::string NodeWhere(const Body& body, const Node& node) {
  return StrCat("node '", node.name, "' (op ", node.op->name, ")", InBody(body));
}

void BuildNodes(const NodeDefs& node_defs, const FunctionLibrary& library, Body* body) {
  IndexNodes(node_defs, body);
  ResolveInputs(node_defs, body);
  SortTopologically(body);
  for (int i : body->topo_order) InferNode(node_defs[i], library, body, i);
}

TensorRef ResolveTensorName(const Body& body, const std::string& text, const std::string& where) {
  ParsedInput p = ParseInput(text, where);
  if (p.control) ThrowInvalidArgument(where, " '", text, "' must name a tensor, not a control dependency");
  auto it = body.node_index.find(p.name);
  if (it != body.node_index.end()) {
    const Node& node = body.nodes[it->second];
    const size_t outputs = node.outputs.dtypes.size();
    if (static_cast<size_t>(p.output) >= outputs) {
      ThrowInvalidArgument(where, " '", text, "' refers to output ", p.output, " but '", node.name, "' has ", outputs,
                           " output", outputs == 1 ? "" : "s");
    }
    return TensorRef::Node(it->second, p.output);
  }
  int arg = FindArg(body, p.name);
  if (arg >= 0 && p.output == 0) return TensorRef::Arg(arg);
  ThrowInvalidArgument(where, " '", text, "' names no node", body.function_name.empty() ? "" : " or argument",
                       " of the ", body.Describe());
}

std::shared_ptr<Body> BuildFunctionBody(const proto::FunctionDef& fdef, const FunctionLibrary& library) {
  auto body = std::make_shared<Body>();
  body->function_name = fdef.signature().name();
  const FunctionSignature& sig = library.signature(library.Find(body->function_name));
  body->args = sig.inputs;
  BuildNodes(fdef.node_def(), library, body.get());
  const std::string fn = body->Describe();
  for (const Node& node : body->nodes) {
    if (node.op->name == "Placeholder") {
      ThrowInvalidArgument(fn, " has a Placeholder node '", node.name,
                           "'; a function receives its inputs as arguments");
    }
  }
  for (const TensorSpec& out : sig.outputs) {
    auto it = fdef.ret().find(out.name);
    if (it == fdef.ret().end()) ThrowInvalidArgument(fn, " gives no ret for its output '", out.name, "'");
    std::string where = StrCat(fn, " ret '", out.name, "'");
    TensorRef ref = ResolveTensorName(*body, it->second, where);
    DType got = body->StaticDType(ref);
    if (got != out.dtype) {
      ThrowInvalidArgument(where, ": output '", out.name, "' is declared ", DTypeName(out.dtype), " but '",
                           it->second, "' is ", DTypeName(got));
    }
    const PartialShape& inferred = body->StaticShape(ref);
    if (!MergeShapes(out.shape, inferred)) {
      ThrowInvalidArgument(where, ": output '", out.name, "' is declared with shape ", out.shape.ToString(),
                           " but '", it->second, "' has shape ", inferred.ToString());
    }
    body->rets.push_back(ref);
    body->results.push_back(out);
  }
  for (const auto& kv : fdef.ret()) {
    bool known = std::any_of(sig.outputs.begin(), sig.outputs.end(),
                             [&](const TensorSpec& s) { return s.name == kv.first; });
    if (!known) ThrowInvalidArgument(fn, " has a ret for '", kv.first, "', which is not one of its outputs");
  }
  for (const std::string& name : fdef.control_ret()) {
    auto it = body->node_index.find(name);
    if (it == body->node_index.end()) {
      ThrowInvalidArgument(fn, " control_ret '", name, "' is not a node of the function");
    }
    body->control_rets.push_back(it->second);
  }
  return body;
}

}  // namespace treadle::graph
