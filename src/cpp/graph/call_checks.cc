#include "graph/call_checks.h"


#include "graph/body_builder.h"
#include "graph/library.h"
#include "graph/shape_merge.h"
#include "util/errors.h"

namespace treadle::graph {

namespace {

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

// Checks a node's call of `sig` against how its op passes arguments and takes
// results (the registry's FunctionAttrDef).
void CheckCall(const Node& node, const std::string& where, const FunctionAttrDef& rule, const FunctionSignature& sig,
               const std::vector<PartialShape>& input_shapes) {
  const std::string what = StrCat(where, " attr '", rule.attr, "': function '", sig.name, "'");
  const auto& arg_types = node.attrs.GetTypeList(rule.arg_types);
  std::vector<DType> takes = SpecTypes(sig.inputs);
  if (takes != arg_types) {
    ThrowInvalidArgument(what, " takes ", TypeList(takes), " but the node's ", rule.arg_types, " is ",
                         TypeList(arg_types));
  }
  std::vector<DType> gives = SpecTypes(sig.outputs);
  if (!rule.result_types.empty()) {
    const auto& result_types = node.attrs.GetTypeList(rule.result_types);
    if (gives != result_types) {
      ThrowInvalidArgument(what, " returns ", TypeList(gives), " but the node's ", rule.result_types, " is ",
                           TypeList(result_types));
    }
  } else if (gives.size() != 1) {
    ThrowInvalidArgument(what, " must return exactly one value, but returns ", gives.size());
  }
  const size_t first = static_cast<size_t>(rule.first_input);
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
  auto resolve = [&](const std::string& attr, const FuncRef& ref) {
    const int f = library.Find(ref.name);
    if (f < 0) {
      throw Error(Code::kNotFound, StrCat(where, " attr '", attr, "' names function '", ref.name,
                                          "', which is not in the library"));
    }
    node->callees.push_back(f);
    return f;
  };
  for (const auto& [attr, value] : node->attrs.items()) {
    // A list of functions (the Loom ops') is only resolved here; its op checks the signatures it needs.
    if (const auto* refs = std::get_if<std::vector<FuncRef>>(&value)) {
      for (const FuncRef& ref : *refs) resolve(attr, ref);
      continue;
    }
    const FuncRef* ref = std::get_if<FuncRef>(&value);
    if (!ref) continue;
    const int f = resolve(attr, *ref);
    if (const FunctionAttrDef* rule = node->op->FindFunctionAttr(attr)) {
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
