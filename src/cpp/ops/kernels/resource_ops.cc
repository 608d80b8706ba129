// Variables as resources: VarHandleOp makes one, ReadVariableOp /
// AssignVariableOp / AssignAdd/SubVariableOp use it. A variable holds an
// immutable tensor; assignment swaps in a new one under a mutex, so a reader
// always sees a whole value and a value it read never changes under it.
// ResourceScatterAdd/Sub update rows in place when no one else holds the
// value (copying it first otherwise), so a sparse update costs its rows.
#include <mutex>

#include "ops/dispatch.h"
#include "ops/kernels/array_util.h"
#include "ops/op_helpers.h"
#include "tensor/handle.h"
#include "util/parallel.h"

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
  // check(value) validates (throwing before any write); then apply(value)
  // writes into a value nobody else can see: the held tensor when the
  // variable is its only owner, else a private copy that replaces it.
  template <typename C, typename A>
  void ModifyInPlace(const char* where, C check, A apply) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!value_.defined()) {
      throw Error(Code::kFailedPrecondition,
                  StrCat(where, ": variable '", name_, "' is updated before it was initialized"));
    }
    check(value_);
    if (value_.buffer().use_count() > 1 || value_.buffer()->is_external()) value_ = value_.Clone();
    apply(value_);
  }
  DType dtype() const { return dtype_; }
  const std::string& name() const { return name_; }

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

// ---------------------------------------------------------------- sparse updates

// ref[indices[i], ...] += sign * updates[i, ...]; updates is a scalar (added
// to every selected row) or of shape indices.shape + ref.shape[1:].
template <typename T, typename Index>
void ScatterRows(T* ref, const Index* indices, int64_t n, const T* updates, bool scalar, int64_t inner, T sign,
                 int64_t e0, int64_t e1) {
  for (int64_t i = 0; i < n; ++i) {
    T* dst = ref + static_cast<int64_t>(indices[i]) * inner;
    if (scalar) {
      const T u = sign * updates[0];
      for (int64_t e = e0; e < e1; ++e) dst[e] += u;
    } else {
      const T* src = updates + i * inner;
      if (sign > T(0)) {
        for (int64_t e = e0; e < e1; ++e) dst[e] += src[e];
      } else {
        for (int64_t e = e0; e < e1; ++e) dst[e] -= src[e];
      }
    }
  }
}

void CheckScatterOperands(const OpDef& op, const std::string& var_name, const Tensor& value, const Tensor& indices,
                          const Tensor& updates) {
  if (updates.dtype() != value.dtype()) {
    ThrowInvalidArgument(op.name, ": updates has dtype ", DTypeName(updates.dtype()), " but variable '", var_name,
                         "' has dtype ", DTypeName(value.dtype()));
  }
  if (value.rank() < 1) {
    ThrowInvalidArgument(op.name, ": variable '", var_name, "' must be at least 1-D to scatter into, got ",
                         value.DebugString());
  }
  if (updates.rank() != 0) {
    Dims want = indices.shape();
    want.insert(want.end(), value.shape().begin() + 1, value.shape().end());
    if (updates.shape() != want) {
      ThrowInvalidArgument(op.name, ": updates must be a scalar or of shape indices.shape + variable.shape[1:] = ",
                           DimsToString(want), ", got ", DimsToString(updates.shape()));
    }
  }
  const int64_t rows = value.dim(0);
  VisitInt(indices.dtype(), op.name.c_str(), [&](auto itag) {
    using Index = typename decltype(itag)::type;
    const Index* ix = indices.data<Index>();
    for (int64_t i = 0; i < indices.num_elements(); ++i) {
      if (ix[i] < 0 || ix[i] >= rows) {
        ThrowInvalidArgument(op.name, ": indices[", i, "] = ", ix[i], " is not in [0, ", rows, ") (variable '",
                             var_name, "' has shape ", DimsToString(value.shape()), ")");
      }
    }
  });
}

void ScatterKernel(KernelContext& ctx, bool add) {
  auto var = VariableOf(ctx);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const char* where = ctx.op.name.c_str();
  var->ModifyInPlace(
      where, [&](const Tensor& value) { CheckScatterOperands(ctx.op, var->name(), value, indices, updates); },
      [&](Tensor& value) {
        const int64_t inner = DimProduct(value.shape(), 1, value.rank());
        VisitInt(indices.dtype(), where, [&](auto itag) {
          using Index = typename decltype(itag)::type;
          VisitNumeric(value.dtype(), where, [&](auto tag) {
            using T = typename decltype(tag)::type;
            // Threads take slices of every row's elements: rows may repeat, elements never meet.
            const int64_t n = indices.num_elements();
            constexpr int64_t kMinParallelElements = 1 << 16, kSliceAlign = 16;
            const int parts = parallel::PartsFor(n * inner, kMinParallelElements);
            parallel::ParallelFor(parts, [&](int p) {
              const parallel::Range e = parallel::Part(inner, p, parts, kSliceAlign);
              ScatterRows<T, Index>(value.data<T>(), indices.data<Index>(), n, updates.data<T>(), updates.rank() == 0,
                                    inner, add ? T(1) : T(-1), e.begin, e.end);
            });
          });
        });
      });
}

OpDef MakeScatter(const char* name, bool add) {
  OpDef op;
  op.name = name;
  op.inputs = {{"resource", false, "", kResourceType},
               {"indices", false, "Tindices", kIndexTypes},
               {"updates", false, "dtype", kNumericTypes}};
  op.stateful = true;
  op.dtype_fn = [](const InferContext&) { return std::vector<DType>{}; };
  op.shape_fn = [](const InferContext& c) {
    // The variable's shape is known only when running: check what the
    // indices and updates alone tell (updates starts with indices' shape).
    const PartialShape& ids = c.shapes[1];
    const PartialShape& upd = c.shapes[2];
    if (ids.known_rank && upd.known_rank && upd.rank() != 0) {
      bool ok = upd.rank() >= ids.rank();
      for (int d = 0; ok && d < ids.rank(); ++d) {
        ok = ids.dims[d] < 0 || upd.dims[d] < 0 || ids.dims[d] == upd.dims[d];
      }
      if (!ok) {
        ThrowValueError(c.op.name, ": updates must be a scalar or of shape indices.shape + variable.shape[1:]; got "
                        "indices of shape ", ids.ToString(), " and updates of shape ", upd.ToString());
      }
    }
    return std::vector<PartialShape>{};
  };
  op.kernel = [add](KernelContext& ctx) { ScatterKernel(ctx, add); };
  op.doc = add ? "Adds updates to rows of a variable: ref[indices[i], ...] += updates[i, ...] (duplicates add up)."
               : "Subtracts updates from rows of a variable: ref[indices[i], ...] -= updates[i, ...] (duplicates "
                 "add up).";
  return op;
}

OpRegistrar resource_scatter_add_op(MakeScatter("ResourceScatterAdd", true));
OpRegistrar resource_scatter_sub_op(MakeScatter("ResourceScatterSub", false));

}  // namespace
}  // namespace treadle
