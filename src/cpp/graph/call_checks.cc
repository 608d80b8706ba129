#include "graph/call_checks.h"


#include "graph/body_builder.h"
#include "graph/library.h"
#include "graph/shape_merge.h"
#include "util/errors.h"

namespace treadle::graph {

namespace {

// How an op that calls functions passes its inputs and results: which node
// inputs become the function's arguments (all, or all but the condition),
// and which list(type) attrs type the arguments and results (nullptr for
// results: the function returns exactly one value of any dtype).
struct CallRule {
  const char* op;
  const char* func_attr;
  bool skips_first_input;
  const char* arg_types;
  const char* result_types;
};

constexpr CallRule kCallRules[] = {
    {"If", "then_branch", true, "Tin", "Tout"},
    {"If", "else_branch", true, "Tin", "Tout"},
    {"While", "cond", false, "T", nullptr},
    {"While", "body", false, "T", "T"},
    {"StatelessIf", "then_branch", true, "Tin", "Tout"},
    {"StatelessIf", "else_branch", true, "Tin", "Tout"},
    {"StatelessWhile", "cond", false, "T", nullptr},
    {"StatelessWhile", "body", false, "T", "T"},
    {"PartitionedCall", "f", false, "Tin", "Tout"},
    {"StatefulPartitionedCall", "f", false, "Tin", "Tout"},
};

const CallRule* FindRule(const std::string& op, const std::string& attr) {
  for (const CallRule& r : kCallRules) {
    if (op == r.op && attr == r.func_attr) return &r;
  }
  return nullptr;
}

std::string TypeList(const std::vector<DType>& types) {
  std::string s = "(";
  for (size_t i = 0; i < types.size(); ++i) s += (i ? ", " : "") + std::string(DTypeName(types[i]));
  return s + ")";
}

std::vector<DType> SpecTypes(const std::vector<TensorSpec>& specs) {
  std::vector<DType> out;
  for (const auto& s : specs) out.push_back(s.dtype);
  return out;
}

void CheckCall(const Node& node, const std::string& where, const CallRule& rule, const FunctionSignature& sig,
               const std::vector<PartialShape>& input_shapes) {
  const std::string what = StrCat(where, " attr '", rule.func_attr, "': function '", sig.name, "'");
  const auto& arg_types = node.attrs.GetTypeList(rule.arg_types);
  std::vector<DType> takes = SpecTypes(sig.inputs);
  if (takes != arg_types) {
    ThrowInvalidArgument(what, " takes ", TypeList(takes), " but the node's ", rule.arg_types, " is ",
                         TypeList(arg_types));
  }
  std::vector<DType> gives = SpecTypes(sig.outputs);
  if (rule.result_types) {
    const auto& result_types = node.attrs.GetTypeList(rule.result_types);
    if (gives != result_types) {
      ThrowInvalidArgument(what, " returns ", TypeList(gives), " but the node's ", rule.result_types, " is ",
                           TypeList(result_types));
    }
  } else if (gives.size() != 1) {
    ThrowInvalidArgument(what, " must return exactly one value, but returns ", gives.size());
  }
  const size_t first = rule.skips_first_input ? 1 : 0;
  for (size_t k = 0; k < sig.inputs.size() && first + k < input_shapes.size(); ++k) {
    if (!MergeShapes(input_shapes[first + k], sig.inputs[k].shape)) {
      ThrowInvalidArgument(what, " argument '", sig.inputs[k].name, "' expects shape ",
                           sig.inputs[k].shape.ToString(), " but the node's input ", first + k, " has shape ",
                           input_shapes[first + k].ToString());
    }
  }
}

// What the called functions promise about the node's results.
std::vector<PartialShape> PromisedShapes(const Node& node, const std::vector<PartialShape>& input_shapes,
                                         const FunctionLibrary& library) {
  auto result_shapes = [&](const char* attr) {
    std::vector<PartialShape> out;
    for (const auto& s : library.signature(library.Find(node.attrs.GetFunc(attr).name)).outputs) {
      out.push_back(s.shape);
    }
    return out;
  };
  const std::string& op = node.op->name;
  if (op == "If" || op == "StatelessIf") {
    std::vector<PartialShape> a = result_shapes("then_branch"), b = result_shapes("else_branch");
    for (size_t k = 0; k < a.size(); ++k) a[k] = GeneralizeShapes(a[k], b[k]);
    return a;
  }
  if (op == "While" || op == "StatelessWhile") {
    // The results are the inputs (no iteration) or what the body returned.
    std::vector<PartialShape> body = result_shapes("body");
    for (size_t k = 0; k < body.size() && k < input_shapes.size(); ++k) {
      body[k] = GeneralizeShapes(body[k], input_shapes[k]);
    }
    return body;
  }
  return result_shapes("f");
}

}  // namespace

void CheckFunctionCalls(const Body& body, Node* node, const std::vector<PartialShape>& input_shapes,
                        const FunctionLibrary& library) {
  const std::string where = NodeWhere(body, *node);
  bool has_rule = false;
  for (const auto& [attr, value] : node->attrs.items()) {
    const FuncRef* ref = std::get_if<FuncRef>(&value);
    if (!ref) continue;
    const int f = library.Find(ref->name);
    if (f < 0) {
      throw Error(Code::kNotFound, StrCat(where, " attr '", attr, "' names function '", ref->name,
                                          "', which is not in the library"));
    }
    node->callees.push_back(f);
    if (const CallRule* rule = FindRule(node->op->name, attr)) {
      CheckCall(*node, where, *rule, library.signature(f), input_shapes);
      has_rule = true;
    }
  }
  if (!has_rule) return;
  std::vector<PartialShape> promised = PromisedShapes(*node, input_shapes, library);
  auto& shapes = node->outputs.shapes;
  for (size_t k = 0; k < shapes.size() && k < promised.size(); ++k) {
    auto merged = MergeShapes(shapes[k], promised[k]);
    if (!merged) {
      ThrowInvalidArgument(where, ": result ", k, " has shape ", shapes[k].ToString(),
                           " by the node's output_shapes, but its function returns shape ", promised[k].ToString());
    }
    shapes[k] = std::move(*merged);
  }
}

}  // namespace treadle::graph
