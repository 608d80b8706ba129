// Variables as resources: VarHandleOp makes one, ReadVariableOp /
// AssignVariableOp / AssignAdd/SubVariableOp use it. A variable holds an
// immutable tensor; assignment swaps in a new one under a mutex, so a reader
// always sees a whole value and a value it read never changes under it.
#include <mutex>

#include "ops/op_helpers.h"
#include "tensor/handle.h"

namespace treadle {
namespace {

class Variable : public HandleBase {
 public:
  Variable(DType dtype, PartialShape shape, std::string name)
      : dtype_(dtype), shape_(std::move(shape)), name_(std::move(name)) {}
  std::string TypeName() const override { return "Variable"; }

  Tensor Read(const char* where) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!value_.defined()) {
      throw Error(Code::kFailedPrecondition,
                  StrCat(where, ": variable '", name_, "' is read before it was initialized"));
    }
    return value_;
  }
  void Write(Tensor value, const char* where) {
    Check(value, where);
    std::lock_guard<std::mutex> lock(mu_);
    value_ = std::move(value);
  }
  // value <- f(value, delta), atomically with respect to other writers.
  template <typename F>
  void Update(const Tensor& delta, const char* where, F f) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!value_.defined()) {
      throw Error(Code::kFailedPrecondition,
                  StrCat(where, ": variable '", name_, "' is updated before it was initialized"));
    }
    if (delta.dtype() != dtype_ || delta.shape() != value_.shape()) {
      ThrowInvalidArgument(where, ": cannot update variable '", name_, "' of ", value_.DebugString(), " with ",
                           delta.DebugString());
    }
    value_ = f(value_, delta);
  }
  DType dtype() const { return dtype_; }

 private:
  void Check(const Tensor& value, const char* where) const {
    if (value.dtype() != dtype_) {
      ThrowInvalidArgument(where, ": variable '", name_, "' has dtype ", DTypeName(dtype_), " but the value has dtype ",
                           DTypeName(value.dtype()));
    }
    if (!shape_.IsCompatibleWith(value.shape())) {
      ThrowInvalidArgument(where, ": variable '", name_, "' has shape ", shape_.ToString(),
                           " but the value has shape ", DimsToString(value.shape()));
    }
  }
  mutable std::mutex mu_;
  DType dtype_;
  PartialShape shape_;
  std::string name_;
  Tensor value_;
};

std::shared_ptr<Variable> VariableOf(const KernelContext& ctx) {
  auto var = GetHandle<Variable>(ctx.input(0), DType::kResource, ctx.op.name.c_str());
  if (const AttrValue* dt = ctx.attrs.Find("dtype")) {
    if (std::get<DType>(*dt) != var->dtype()) {
      ThrowInvalidArgument(ctx.op.name, ": the variable has dtype ", DTypeName(var->dtype()),
                           " but the op expects ", DTypeName(std::get<DType>(*dt)));
    }
  }
  return var;
}

const std::vector<DType> kResourceType = {DType::kResource};

OpDef MakeVarHandle() {
  OpDef op;
  op.name = "VarHandleOp";
  op.outputs = {"resource"};
  op.attrs = {{"dtype", AttrType::kType, std::nullopt},
              {"shape", AttrType::kShape, AttrValue(PartialShape::Unknown())},
              {"shared_name", AttrType::kString, AttrValue(std::string())}};
  op.stateful = true;
  op.dtype_fn = FixedDType(DType::kResource);
  op.shape_fn = ScalarShape();
  op.kernel = [](KernelContext& ctx) {
    auto var = std::make_shared<Variable>(ctx.attrs.GetType("dtype"), ctx.attrs.GetShape("shape"),
                                          ctx.attrs.GetString("shared_name"));
    ctx.set_output(0, MakeHandleTensor(DType::kResource, std::move(var)));
  };
  op.doc = "Creates a new, uninitialized variable and returns its handle.";
  return op;
}

OpDef MakeReadVariable() {
  OpDef op;
  op.name = "ReadVariableOp";
  op.inputs = {{"resource", false, "", kResourceType}};
  op.outputs = {"value"};
  op.attrs = {{"dtype", AttrType::kType, std::nullopt}};
  op.stateful = true;  // its result depends on when it runs
  op.dtype_fn = DTypeFromAttr("dtype");
  op.shape_fn = [](const InferContext&) { return std::vector<PartialShape>{PartialShape::Unknown()}; };
  op.kernel = [](KernelContext& ctx) { ctx.set_output(0, VariableOf(ctx)->Read("ReadVariableOp")); };
  op.doc = "The current value of a variable.";
  return op;
}

OpDef MakeAssign(const char* name, const char* doc) {
  OpDef op;
  op.name = name;
  op.inputs = {{"resource", false, "", kResourceType}, {"value", false, "", {}}};
  op.attrs = {{"dtype", AttrType::kType, std::nullopt}};
  op.stateful = true;
  op.dtype_fn = [](const InferContext& c) {
    if (c.dtypes[1] != c.attrs.GetType("dtype")) {
      ThrowTypeError(c.op.name, ": value has dtype ", DTypeName(c.dtypes[1]), " but the variable has dtype ",
                     DTypeName(c.attrs.GetType("dtype")));
    }
    return std::vector<DType>{};
  };
  op.shape_fn = [](const InferContext&) { return std::vector<PartialShape>{}; };
  op.doc = doc;
  return op;
}

OpDef WithKernel(OpDef op, KernelFn kernel) {
  op.kernel = std::move(kernel);
  return op;
}

Tensor RunBinary(const char* op_name, const Tensor& a, const Tensor& b) {
  static const AttrMap kNoAttrs;
  return RunOp(OpRegistry::Global().Get(op_name), {a, b}, kNoAttrs)[0];
}

OpRegistrar var_handle_op(MakeVarHandle());
OpRegistrar read_variable_op(MakeReadVariable());
OpRegistrar assign_variable_op(WithKernel(MakeAssign("AssignVariableOp", "Sets a variable's value."),
                                          [](KernelContext& ctx) {
                                            VariableOf(ctx)->Write(ctx.input(1), "AssignVariableOp");
                                          }));
OpRegistrar assign_add_op(WithKernel(MakeAssign("AssignAddVariableOp", "Adds to a variable's value."),
                                     [](KernelContext& ctx) {
                                       VariableOf(ctx)->Update(ctx.input(1), "AssignAddVariableOp",
                                                               [](const Tensor& v, const Tensor& d) {
                                                                 return RunBinary("AddV2", v, d);
                                                               });
                                     }));
OpRegistrar assign_sub_op(WithKernel(MakeAssign("AssignSubVariableOp", "Subtracts from a variable's value."),
                                     [](KernelContext& ctx) {
                                       VariableOf(ctx)->Update(ctx.input(1), "AssignSubVariableOp",
                                                               [](const Tensor& v, const Tensor& d) {
                                                                 return RunBinary("Sub", v, d);
                                                               });
                                     }));

}  // namespace
}  // namespace treadle
