// Control flow and function calls. Their bodies are library functions, run
// through the FunctionCaller the graph executor gives the kernel; outside a
// graph there is none, so these ops only run inside graphs.
#include "graph/shape_merge.h"
#include "ops/op_helpers.h"
#include "ops/registry.h"
#include "util/cancel.h"
#include "util/errors.h"

namespace treadle {
namespace {

DTypeFn TypesFromAttr(const char* attr) {
  return [attr](const InferContext& c) { return c.attrs.GetTypeList(attr); };
}

// output_shapes when given (one per output), unknown shapes otherwise.
std::vector<PartialShape> DeclaredOutputShapes(const InferContext& c, const char* types_attr) {
  const size_t n = c.attrs.GetTypeList(types_attr).size();
  const auto& shapes = c.attrs.GetShapeList("output_shapes");
  if (shapes.empty()) return std::vector<PartialShape>(n);
  if (shapes.size() != n) {
    ThrowValueError(c.op.name, ": output_shapes has ", shapes.size(), " entries but ", types_attr, " has ", n);
  }
  return shapes;
}

void RequireFunctions(const KernelContext& ctx) {
  if (!ctx.functions) {
    throw Error(Code::kFailedPrecondition, StrCat(ctx.op.name, " runs library functions, so it can only run ",
                                                  "inside a graph (a td.function)"));
  }
}

// TensorFlow's truthiness of a condition: a scalar is its value (non-zero
// number, non-empty string); any other tensor is true when it is non-empty.
bool Truthy(const Tensor& t) {
  if (t.rank() != 0) return t.num_elements() > 0;
  switch (t.dtype()) {
    case DType::kBool: return *t.data<bool>();
    case DType::kFloat32: return *t.data<float>() != 0;
    case DType::kFloat64: return *t.data<double>() != 0;
    case DType::kInt32: return *t.data<int32_t>() != 0;
    case DType::kInt64: return *t.data<int64_t>() != 0;
    case DType::kString: return !t.data<std::string>()->empty();
    default: ThrowInvalidArgument("a condition of dtype ", DTypeName(t.dtype()), " has no truth value");
  }
}

// Makes a function's results the kernel's outputs, after checking they are
// what the node declared (the library was validated, so this guards bugs).
void SetResults(KernelContext& ctx, std::vector<Tensor> results, const std::string& fname) {
  if (results.size() != ctx.out_dtypes.size()) {
    throw Error(Code::kInternal, StrCat(ctx.op.name, ": function '", fname, "' returned ", results.size(),
                                        " values where ", ctx.out_dtypes.size(), " were expected"));
  }
  for (size_t k = 0; k < results.size(); ++k) {
    if (results[k].dtype() != ctx.out_dtypes[k]) {
      throw Error(Code::kInternal, StrCat(ctx.op.name, ": function '", fname, "' returned ",
                                          DTypeName(results[k].dtype()), " as result ", k, " where ",
                                          DTypeName(ctx.out_dtypes[k]), " was expected"));
    }
    ctx.set_output(static_cast<int>(k), std::move(results[k]));
  }
}

// ---- If -------------------------------------------------------------------

void IfKernel(KernelContext& ctx) {
  RequireFunctions(ctx);
  const bool taken = Truthy(ctx.input(0));
  const std::string& fname = ctx.attrs.GetFunc(taken ? "then_branch" : "else_branch").name;
  std::vector<Tensor> args(ctx.inputs.begin() + 1, ctx.inputs.end());
  SetResults(ctx, ctx.functions->CallFunction(fname, args), fname);
}

// "If", and "StatelessIf" (TensorFlow's name when neither branch has effects):
// the same op under the two names TensorFlow's graphs use.
OpDef IfOp(const char* name) {
  OpDef op;
  op.name = name;
  op.inputs = {{"cond", false, "", {}}, {"input", true, "", {}}};
  op.outputs = {"output"};
  op.attrs = {{"Tin", AttrType::kTypeList, std::nullopt},
              {"Tout", AttrType::kTypeList, std::nullopt},
              {"then_branch", AttrType::kFunc, std::nullopt},
              {"else_branch", AttrType::kFunc, std::nullopt},
              {"output_shapes", AttrType::kShapeList, AttrValue(std::vector<PartialShape>{})}};
  op.dtype_fn = [](const InferContext& c) {
    CheckInputTypesMatchAttr(c, "Tin", 1);
    return c.attrs.GetTypeList("Tout");
  };
  op.shape_fn = [](const InferContext& c) { return DeclaredOutputShapes(c, "Tout"); };
  op.kernel = IfKernel;
  // Its branches may have effects (If), or the stateless form may be traced
  // with ones that cannot be seen yet: never fold or merge either.
  op.stateful = true;
  op.doc = "Runs then_branch(input) when cond is true, else_branch(input) otherwise.";
  op.function_attrs = {{"then_branch", 1, "Tin", "Tout"}, {"else_branch", 1, "Tin", "Tout"}};
  return op;
}

// ---- While ----------------------------------------------------------------

void CheckLoopVars(const KernelContext& ctx, const std::vector<Tensor>& vars, int64_t iteration) {
  if (vars.size() != ctx.out_dtypes.size()) {
    throw Error(Code::kInternal, StrCat("While: the body returned ", vars.size(), " loop variables where ",
                                        ctx.out_dtypes.size(), " were expected"));
  }
  const auto& invariants = ctx.attrs.GetShapeList("output_shapes");
  for (size_t k = 0; k < vars.size(); ++k) {
    if (vars[k].dtype() != ctx.out_dtypes[k]) {
      ThrowInvalidArgument("While: in iteration ", iteration, " the body changed loop variable ", k, " from ",
                           DTypeName(ctx.out_dtypes[k]), " to ", DTypeName(vars[k].dtype()));
    }
    if (!invariants.empty() && !invariants[k].IsCompatibleWith(vars[k].shape())) {
      ThrowInvalidArgument("While: in iteration ", iteration, " the body gave loop variable ", k, " shape ",
                           DimsToString(vars[k].shape()), ", which does not fit its shape invariant ",
                           invariants[k].ToString(), " (output_shapes)");
    }
  }
}

void WhileKernel(KernelContext& ctx) {
  RequireFunctions(ctx);
  const std::string& cond = ctx.attrs.GetFunc("cond").name;
  const std::string& body = ctx.attrs.GetFunc("body").name;
  std::vector<Tensor> vars(ctx.inputs);
  cancel::InstallInterruptHook();  // a loop may never end: make sure Ctrl-C reaches it
  for (int64_t iteration = 0;; ++iteration) {
    cancel::Check();
    std::vector<Tensor> c = ctx.functions->CallFunction(cond, vars);
    if (c.size() != 1) {
      throw Error(Code::kInternal, StrCat("While: cond function '", cond, "' returned ", c.size(), " values"));
    }
    if (!Truthy(c[0])) break;
    std::vector<Tensor> next = ctx.functions->CallFunction(body, vars);
    CheckLoopVars(ctx, next, iteration);
    vars = std::move(next);
  }
  SetResults(ctx, std::move(vars), body);
}

// "While", and "StatelessWhile" (TensorFlow's name when cond and body have no effects).
OpDef WhileOp(const char* name) {
  OpDef op;
  op.name = name;
  op.inputs = {{"input", true, "", {}}};
  op.outputs = {"output"};
  op.attrs = {{"T", AttrType::kTypeList, std::nullopt},
              {"cond", AttrType::kFunc, std::nullopt},
              {"body", AttrType::kFunc, std::nullopt},
              {"output_shapes", AttrType::kShapeList, AttrValue(std::vector<PartialShape>{})},
              {"parallel_iterations", AttrType::kInt, AttrValue(int64_t{10})}};
  op.dtype_fn = [](const InferContext& c) {
    CheckInputTypesMatchAttr(c, "T", 0);
    return c.attrs.GetTypeList("T");
  };
  op.shape_fn = [](const InferContext& c) {
    std::vector<PartialShape> shapes = DeclaredOutputShapes(c, "T");
    for (size_t k = 0; k < shapes.size() && k < c.shapes.size(); ++k) {
      const PartialShape& in = c.shapes[k];
      const PartialShape& inv = shapes[k];
      const bool fits = graph::MergeShapes(in, inv).has_value();
      if (!fits) {
        ThrowValueError("While: loop variable ", k, " enters with shape ", in.ToString(),
                        ", which does not fit its shape invariant ", inv.ToString(), " (output_shapes)");
      }
    }
    return shapes;
  };
  op.kernel = WhileKernel;
  op.stateful = true;  // its body may have effects: never fold or merge it
  op.doc = "Repeats input = body(input) while cond(input) is true; returns the final loop variables.";
  op.function_attrs = {{"cond", 0, "T", ""}, {"body", 0, "T", "T", /*loop_body=*/true}};
  return op;
}

// ---- Calls ----------------------------------------------------------------

void CallKernel(KernelContext& ctx) {
  RequireFunctions(ctx);
  const std::string& fname = ctx.attrs.GetFunc("f").name;
  SetResults(ctx, ctx.functions->CallFunction(fname, ctx.inputs), fname);
}

OpDef CallOp(const char* name, bool stateful) {
  OpDef op;
  op.name = name;
  op.inputs = {{"args", true, "", {}}};
  op.outputs = {"output"};
  op.attrs = {{"Tin", AttrType::kTypeList, std::nullopt},
              {"Tout", AttrType::kTypeList, std::nullopt},
              {"f", AttrType::kFunc, std::nullopt},
              {"output_shapes", AttrType::kShapeList, AttrValue(std::vector<PartialShape>{})},
              // Accepted for compatibility with TensorFlow's GraphDefs; unused.
              {"config", AttrType::kString, AttrValue(std::string())},
              {"config_proto", AttrType::kString, AttrValue(std::string())},
              {"executor_type", AttrType::kString, AttrValue(std::string())}};
  op.dtype_fn = [](const InferContext& c) {
    CheckInputTypesMatchAttr(c, "Tin", 0);
    return c.attrs.GetTypeList("Tout");
  };
  op.shape_fn = [](const InferContext& c) { return DeclaredOutputShapes(c, "Tout"); };
  op.kernel = CallKernel;
  op.stateful = stateful;
  op.doc = "Calls library function f on args and returns its results.";
  op.function_attrs = {{"f", 0, "Tin", "Tout"}};
  return op;
}

OpRegistrar if_op(IfOp("If"));
OpRegistrar stateless_if_op(IfOp("StatelessIf"));
OpRegistrar while_op(WhileOp("While"));
OpRegistrar stateless_while_op(WhileOp("StatelessWhile"));
OpRegistrar partitioned_call_op(CallOp("PartitionedCall", false));
OpRegistrar stateful_partitioned_call_op(CallOp("StatefulPartitionedCall", true));

}  // namespace
}  // namespace treadle
