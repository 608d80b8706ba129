#include "graph/attr_proto.h"

#include "tensor/tensor_proto.h"
#include "util/errors.h"

namespace treadle::graph {

namespace {

using proto::AttrValue_ListValue;

// Which repeated field of a list value holds elements; "list()" when none does.
std::string ListKind(const AttrValue_ListValue& l) {
  std::string kind;
  int filled = 0;
  auto note = [&](int size, const char* name) {
    if (size > 0) {
      ++filled;
      kind = name;
    }
  };
  note(l.i_size(), "list(int)");
  note(l.f_size(), "list(float)");
  note(l.b_size(), "list(bool)");
  note(l.s_size(), "list(string)");
  note(l.type_size(), "list(type)");
  note(l.shape_size(), "list(shape)");
  note(l.tensor_size(), "list(tensor)");
  note(l.func_size(), "list(func)");
  if (filled == 0) return "list()";
  if (filled > 1) return "list(mixed)";
  return kind;
}

[[noreturn]] void ThrowWrongKind(const proto::AttrValue& value, AttrType type, const std::string& where) {
  ThrowInvalidArgument(where, " must be ", AttrTypeName(type), ", got ", ProtoAttrKind(value));
}

}  // namespace

void AttrToProto(const AttrValue& value, proto::AttrValue* out) {
  out->Clear();
  std::visit(
      [out](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          out->set_i(x);
        } else if constexpr (std::is_same_v<T, double>) {
          out->set_f(static_cast<float>(x));  // the wire holds float, as TensorFlow's AttrValue
        } else if constexpr (std::is_same_v<T, bool>) {
          out->set_b(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          out->set_s(x);
        } else if constexpr (std::is_same_v<T, DType>) {
          out->set_type(static_cast<proto::DataType>(static_cast<int>(x)));
        } else if constexpr (std::is_same_v<T, PartialShape>) {
          PartialShapeToProto(x, out->mutable_shape());
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          auto* l = out->mutable_list();
          for (int64_t v : x) l->add_i(v);
        } else if constexpr (std::is_same_v<T, std::vector<DType>>) {
          auto* l = out->mutable_list();
          for (DType t : x) l->add_type(static_cast<proto::DataType>(static_cast<int>(t)));
        } else if constexpr (std::is_same_v<T, Tensor>) {
          TensorToProto(x, out->mutable_tensor());
        } else if constexpr (std::is_same_v<T, FuncRef>) {
          out->mutable_func()->set_name(x.name);
        } else if constexpr (std::is_same_v<T, std::vector<PartialShape>>) {
          auto* l = out->mutable_list();
          for (const PartialShape& s : x) PartialShapeToProto(s, l->add_shape());
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          auto* l = out->mutable_list();
          for (const std::string& s : x) l->add_s(s);
        } else {
          static_assert(std::is_same_v<T, std::vector<FuncRef>>);
          auto* l = out->mutable_list();
          for (const FuncRef& f : x) l->add_func()->set_name(f.name);
        }
      },
      value);
}

std::string ProtoAttrKind(const proto::AttrValue& value) {
  switch (value.value_case()) {
    case proto::AttrValue::kI: return "int";
    case proto::AttrValue::kF: return "float";
    case proto::AttrValue::kB: return "bool";
    case proto::AttrValue::kS: return "string";
    case proto::AttrValue::kType: return "type";
    case proto::AttrValue::kShape: return "shape";
    case proto::AttrValue::kTensor: return "tensor";
    case proto::AttrValue::kList: return ListKind(value.list());
    case proto::AttrValue::kFunc: return "func";
    case proto::AttrValue::VALUE_NOT_SET: return "no value";
  }
  return "an unknown kind of value";
}

AttrValue AttrFromProto(const proto::AttrValue& value, AttrType type, const std::string& where) {
  const auto vcase = value.value_case();
  const bool is_list = vcase == proto::AttrValue::kList;
  // A list value must hold elements of the expected kind only (an empty list fits any list type).
  auto list_of = [&](int size) {
    if (!is_list) ThrowWrongKind(value, type, where);
    std::string kind = ListKind(value.list());
    if (kind != "list()" && size == 0) ThrowWrongKind(value, type, where);
    if (kind == "list(mixed)") ThrowWrongKind(value, type, where);
    return value.list();
  };
  switch (type) {
    case AttrType::kInt:
      if (vcase != proto::AttrValue::kI) ThrowWrongKind(value, type, where);
      return static_cast<int64_t>(value.i());
    case AttrType::kFloat:
      if (vcase != proto::AttrValue::kF) ThrowWrongKind(value, type, where);
      return value.f();
    case AttrType::kBool:
      if (vcase != proto::AttrValue::kB) ThrowWrongKind(value, type, where);
      return value.b();
    case AttrType::kString:
      if (vcase != proto::AttrValue::kS) ThrowWrongKind(value, type, where);
      return value.s();
    case AttrType::kType:
      if (vcase != proto::AttrValue::kType) ThrowWrongKind(value, type, where);
      if (value.type() == proto::DT_INVALID) ThrowInvalidArgument(where, " must be a valid dtype, got DT_INVALID");
      return DTypeFromProtoEnum(value.type(), where);
    case AttrType::kShape:
      if (vcase != proto::AttrValue::kShape) ThrowWrongKind(value, type, where);
      return PartialShapeFromProto(value.shape(), where);
    case AttrType::kTensor:
      if (vcase != proto::AttrValue::kTensor) ThrowWrongKind(value, type, where);
      return TensorFromProto(value.tensor(), where);
    case AttrType::kFunc:
      if (vcase != proto::AttrValue::kFunc) ThrowWrongKind(value, type, where);
      if (value.func().name().empty()) ThrowInvalidArgument(where, " names no function");
      return FuncRef{value.func().name()};
    case AttrType::kIntList: {
      const auto& l = list_of(value.list().i_size());
      return std::vector<int64_t>(l.i().begin(), l.i().end());
    }
    case AttrType::kTypeList: {
      const auto& l = list_of(value.list().type_size());
      std::vector<DType> out;
      out.reserve(l.type_size());
      for (int t : l.type()) {
        if (t == proto::DT_INVALID) ThrowInvalidArgument(where, " holds DT_INVALID, which is not a dtype");
        out.push_back(DTypeFromProtoEnum(t, where));
      }
      return out;
    }
    case AttrType::kShapeList: {
      const auto& l = list_of(value.list().shape_size());
      std::vector<PartialShape> out;
      out.reserve(l.shape_size());
      for (const auto& s : l.shape()) out.push_back(PartialShapeFromProto(s, where));
      return out;
    }
    case AttrType::kStringList: {
      const auto& l = list_of(value.list().s_size());
      return std::vector<std::string>(l.s().begin(), l.s().end());
    }
    case AttrType::kFuncList: {
      const auto& l = list_of(value.list().func_size());
      std::vector<FuncRef> out;
      out.reserve(l.func_size());
      for (const auto& f : l.func()) {
        if (f.name().empty()) ThrowInvalidArgument(where, " names no function in one of its entries");
        out.push_back(FuncRef{f.name()});
      }
      return out;
    }
  }
  ThrowInvalidArgument(where, ": unsupported attribute type");
}

}  // namespace treadle::graph
