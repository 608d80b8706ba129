#include "ops/registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "ops/narrow_types.h"
#include "util/errors.h"

namespace treadle {

const AttrDef* OpDef::FindAttr(std::string_view attr_name) const {
  for (const auto& a : attrs) if (a.name == attr_name) return &a;
  return nullptr;
}

const FunctionAttrDef* OpDef::FindFunctionAttr(std::string_view attr_name) const {
  for (const auto& f : function_attrs) if (f.attr == attr_name) return &f;
  return nullptr;
}

namespace {

// A registration that describes its function attrs wrongly is a bug in the
// core: say which and stop, as for a duplicate name.
void CheckFunctionAttrs(const OpDef& def) {
  auto has = [&](const std::string& name, AttrType type) {
    const AttrDef* a = def.FindAttr(name);
    return a && a->type == type;
  };
  for (const FunctionAttrDef& f : def.function_attrs) {
    const bool ok = has(f.attr, AttrType::kFunc) && f.first_input >= 0 &&
                    f.first_input <= static_cast<int>(def.inputs.size()) && has(f.arg_types, AttrType::kTypeList) &&
                    (f.result_types.empty() || has(f.result_types, AttrType::kTypeList));
    if (!ok) {
      std::fprintf(stderr, "treadle: op %s describes function attr %s wrongly\n", def.name.c_str(), f.attr.c_str());
      std::abort();
    }
  }
}

}  // namespace

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = new OpRegistry();  // never destroyed: kernels may run at exit
  return *registry;
}

void OpRegistry::Register(OpDef def) {
  if (ops_.count(def.name)) {
    std::fprintf(stderr, "treadle: op %s registered twice\n", def.name.c_str());
    std::abort();
  }
  CheckFunctionAttrs(def);
  std::string name = def.name;
  ops_.emplace(std::move(name), std::move(def));
}

const OpDef* OpRegistry::Find(std::string_view name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

const OpDef& OpRegistry::Get(std::string_view name) const {
  const OpDef* op = Find(name);
  if (!op) throw Error(Code::kNotFound, StrCat("Op type not registered '", name, "'"));
  return *op;
}

std::vector<const OpDef*> OpRegistry::All() const {
  std::vector<const OpDef*> out;
  for (const auto& kv : ops_) out.push_back(&kv.second);
  return out;
}

std::optional<std::vector<int64_t>> InferContext::IntValues(int i) const {
  const Tensor* t = value(i);
  if (!t) return std::nullopt;
  if (t->rank() > 1) {
    ThrowValueError(op.name, ": input '", i, "' must be a scalar or vector, got shape ", DimsToString(t->shape()));
  }
  std::vector<int64_t> out(t->num_elements());
  if (t->dtype() == DType::kInt32) {
    std::copy(t->data<int32_t>(), t->data<int32_t>() + out.size(), out.begin());
  } else if (t->dtype() == DType::kInt64) {
    std::copy(t->data<int64_t>(), t->data<int64_t>() + out.size(), out.begin());
  } else {
    ThrowTypeError(op.name, ": input ", i, " must be int32 or int64, got ", DTypeName(t->dtype()));
  }
  return out;
}

Tensor& KernelContext::allocate_output(int i) {
  const PartialShape& s = out_shapes[i];
  if (!s.fully_defined()) {
    throw Error(Code::kInternal, StrCat(op.name, ": output ", i, " has no concrete shape to allocate"));
  }
  return allocate_output(i, s.dims);
}

Tensor& KernelContext::allocate_output(int i, Dims shape) {
  if (allocator && allocator->Allocate(out_dtypes[i], shape, &outputs[i])) return outputs[i];
  outputs[i] = Tensor(out_dtypes[i], std::move(shape));
  return outputs[i];
}

std::pair<int, int> ArgRange(const OpDef& op, int arg, int num_inputs) {
  int fixed = 0;
  for (const auto& a : op.inputs) fixed += a.is_list ? 0 : 1;
  int list_len = num_inputs - fixed;
  int begin = 0;
  for (int k = 0; k < arg; ++k) begin += op.inputs[k].is_list ? list_len : 1;
  return {begin, begin + (op.inputs[arg].is_list ? list_len : 1)};
}

static std::string AllowedList(const std::vector<DType>& allowed) {
  std::string s;
  for (size_t i = 0; i < allowed.size(); ++i) s += (i ? ", " : "") + std::string(DTypeName(allowed[i]));
  return s;
}

void CheckInputDTypes(const OpDef& op, const std::vector<DType>& dtypes) {
  int n = static_cast<int>(dtypes.size());
  int fixed = 0;
  bool has_list = false;
  for (const auto& a : op.inputs) {
    if (a.is_list) has_list = true;
    else ++fixed;
  }
  if (n < fixed || (!has_list && n != fixed)) {
    ThrowTypeError(op.name, " takes ", has_list ? "at least " : "", fixed, " inputs but ", n, " were given");
  }
  // type attr name -> (dtype, the argument that fixed it)
  std::vector<std::pair<std::string, std::pair<DType, std::string>>> bound;
  for (int a = 0; a < static_cast<int>(op.inputs.size()); ++a) {
    const ArgDef& arg = op.inputs[a];
    auto [begin, end] = ArgRange(op, a, n);
    for (int i = begin; i < end; ++i) {
      DType t = dtypes[i];
      if (!arg.allowed.empty() && std::find(arg.allowed.begin(), arg.allowed.end(), t) == arg.allowed.end()) {
        ThrowTypeError("Value for attr '", arg.type_attr.empty() ? arg.name : arg.type_attr, "' of ", DTypeName(t),
                       " is not in the list of allowed values: ", AllowedList(arg.allowed),
                       " (input '", arg.name, "' of op ", op.name, ")");
      }
      if (arg.type_attr.empty()) continue;
      auto it = std::find_if(bound.begin(), bound.end(), [&](const auto& b) { return b.first == arg.type_attr; });
      if (it == bound.end()) {
        bound.push_back({arg.type_attr, {t, arg.name}});
      } else if (it->second.first != t) {
        ThrowTypeError("Input '", arg.name, "' of '", op.name, "' Op has type ", DTypeName(t),
                       " that does not match type ", DTypeName(it->second.first), " of argument '",
                       it->second.second, "'.");
      }
    }
  }
}

namespace {

// Every attr of the op, in the OpDef's order, each of its type: the attrs are
// canonical already (a call repeated with prepared attrs). One pass, where
// the general path below looks each name up (quadratic in the attr count).
bool IsCanonical(const OpDef& op, const AttrMap& given) {
  const auto& items = given.items();
  if (items.size() != op.attrs.size()) return false;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].first != op.attrs[i].name || AttrValueType(items[i].second) != op.attrs[i].type) return false;
  }
  return true;
}

}  // namespace

AttrMap CanonicalizeAttrs(const OpDef& op, const AttrMap& given, const std::vector<DType>& input_dtypes) {
  CheckInputDTypes(op, input_dtypes);
  if (IsCanonical(op, given)) return given;
  AttrMap out;
  for (const auto& [name, value] : given.items()) {
    const AttrDef* def = op.FindAttr(name);
    if (!def) ThrowTypeError(op.name, " got an unexpected attribute '", name, "'");
    AttrType got = AttrValueType(value);
    if (got != def->type) {
      ThrowTypeError(op.name, ": attribute '", name, "' must be ", AttrTypeName(def->type), ", got ",
                     AttrTypeName(got));
    }
  }
  for (const AttrDef& def : op.attrs) {
    if (const AttrValue* v = given.Find(def.name)) {
      out.Set(def.name, *v);
    } else if (def.default_value) {
      out.Set(def.name, *def.default_value);
    } else {
      ThrowTypeError(op.name, " is missing required attribute '", def.name, "'");
    }
  }
  return out;
}

InferredOutputs InferOutputs(const OpDef& op, const std::vector<DType>& dtypes,
                             const std::vector<PartialShape>& shapes, const std::vector<const Tensor*>& values,
                             const AttrMap& attrs) {
  InferContext ctx{op, dtypes, shapes, values, attrs};
  InferredOutputs out;
  out.dtypes = op.dtype_fn(ctx);
  out.shapes = op.shape_fn(ctx);
  if (out.dtypes.size() != out.shapes.size()) {
    throw Error(Code::kInternal, StrCat(op.name, ": dtype rule gives ", out.dtypes.size(),
                                        " outputs but shape function gives ", out.shapes.size()));
  }
  return out;
}

std::string WithOpTag(const std::string& message, const std::string& op_name) {
  if (message.find("[Op:") != std::string::npos) return message;
  return StrCat(message, " [Op:", op_name, "]");
}

std::vector<Tensor> RunOp(const OpDef& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
                          const FunctionCaller* functions, OutputAllocator* allocator, bool gradient_outputs_wanted) {
  const size_t n = inputs.size();
  std::vector<DType> dtypes(n);
  std::vector<PartialShape> shapes(n);
  std::vector<const Tensor*> values(n);
  for (size_t i = 0; i < n; ++i) {
    dtypes[i] = inputs[i].dtype();
    shapes[i] = PartialShape(inputs[i].shape());
    values[i] = &inputs[i];
  }
  InferredOutputs inferred;
  try {
    CheckInputDTypes(op, dtypes);
    inferred = InferOutputs(op, dtypes, shapes, values, attrs);
  } catch (const StaticError& e) {
    throw Error(Code::kInvalidArgument, WithOpTag(e.what(), op.name));
  }
  std::vector<Tensor> outputs;
  std::vector<char> wanted;
  if (!gradient_outputs_wanted && op.gradient_only_outputs > 0) {
    const size_t n_out = inferred.dtypes.size();
    wanted.assign(n_out, 1);
    for (size_t i = n_out - std::min<size_t>(n_out, op.gradient_only_outputs); i < n_out; ++i) wanted[i] = 0;
  }
  RunKernel(op, inputs, attrs, inferred, functions, &outputs, allocator, wanted.empty() ? nullptr : wanted.data());
  return outputs;
}

const KernelFn& ChooseKernel(const OpDef& op, const std::vector<DType>& input_dtypes,
                             const std::vector<DType>& output_dtypes) {
  if (!op.narrow_kernel) return op.kernel;
  const auto narrow = [](const std::vector<DType>& ts) { return std::any_of(ts.begin(), ts.end(), IsNarrowDType); };
  return narrow(input_dtypes) || narrow(output_dtypes) ? op.narrow_kernel : op.kernel;
}

void RunKernel(const OpDef& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
               const InferredOutputs& inferred, const FunctionCaller* functions, std::vector<Tensor>* outputs,
               OutputAllocator* allocator, const char* wanted, const KernelFn* kernel) {
  KernelContext ctx(op, inputs, attrs, inferred.dtypes, inferred.shapes, functions, std::move(*outputs), allocator);
  ctx.wanted = wanted;
  try {
    if (kernel != nullptr) {
      (*kernel)(ctx);
    } else if (op.narrow_kernel && IsNarrowCall(ctx)) {
      op.narrow_kernel(ctx);
    } else {
      op.kernel(ctx);
    }
  } catch (const StaticError& e) {
    throw Error(Code::kInvalidArgument, WithOpTag(e.what(), op.name));
  } catch (const Error& e) {
    // Name the op in every kernel error, once (a nested call's error keeps its own).
    std::string msg = WithOpTag(e.what(), op.name);
    if (msg == e.what()) throw;
    throw Error(e.code(), std::move(msg));
  }
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (!ctx.outputs[i].defined()) {
      throw Error(Code::kInternal, StrCat(op.name, ": kernel did not produce output ", i));
    }
  }
  *outputs = std::move(ctx.outputs);
}

}  // namespace treadle
