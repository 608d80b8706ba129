#include "ops/attr.h"

#include "util/errors.h"

namespace treadle {

const char* AttrTypeName(AttrType t) {
  switch (t) {
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kBool: return "bool";
    case AttrType::kString: return "string";
    case AttrType::kType: return "type";
    case AttrType::kShape: return "shape";
    case AttrType::kIntList: return "list(int)";
    case AttrType::kTypeList: return "list(type)";
    case AttrType::kTensor: return "tensor";
    case AttrType::kFunc: return "func";
    case AttrType::kShapeList: return "list(shape)";
    case AttrType::kStringList: return "list(string)";
    case AttrType::kFuncList: return "list(func)";
  }
  return "?";
}

AttrType AttrValueType(const AttrValue& v) {
  return static_cast<AttrType>(v.index());
}

void AttrMap::Set(std::string name, AttrValue value) {
  for (auto& item : items_) {
    if (item.first == name) {
      item.second = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(name), std::move(value));
}

const AttrValue* AttrMap::Find(std::string_view name) const {
  for (const auto& item : items_) {
    if (item.first == name) return &item.second;
  }
  return nullptr;
}

template <typename T>
const T& AttrMap::Get(std::string_view name, AttrType expected) const {
  const AttrValue* v = Find(name);
  if (!v) ThrowInvalidArgument("missing attribute '", name, "'");
  if (const T* p = std::get_if<T>(v)) return *p;
  ThrowInvalidArgument("attribute '", name, "' should be of type ", AttrTypeName(expected), " but is of type ",
                       AttrTypeName(AttrValueType(*v)));
}

int64_t AttrMap::GetInt(std::string_view n) const { return Get<int64_t>(n, AttrType::kInt); }
double AttrMap::GetFloat(std::string_view n) const { return Get<double>(n, AttrType::kFloat); }
bool AttrMap::GetBool(std::string_view n) const { return Get<bool>(n, AttrType::kBool); }
const std::string& AttrMap::GetString(std::string_view n) const { return Get<std::string>(n, AttrType::kString); }
DType AttrMap::GetType(std::string_view n) const { return Get<DType>(n, AttrType::kType); }
const PartialShape& AttrMap::GetShape(std::string_view n) const { return Get<PartialShape>(n, AttrType::kShape); }
const std::vector<int64_t>& AttrMap::GetIntList(std::string_view n) const {
  return Get<std::vector<int64_t>>(n, AttrType::kIntList);
}
const std::vector<DType>& AttrMap::GetTypeList(std::string_view n) const {
  return Get<std::vector<DType>>(n, AttrType::kTypeList);
}
const Tensor& AttrMap::GetTensor(std::string_view n) const { return Get<Tensor>(n, AttrType::kTensor); }
const FuncRef& AttrMap::GetFunc(std::string_view n) const { return Get<FuncRef>(n, AttrType::kFunc); }
const std::vector<PartialShape>& AttrMap::GetShapeList(std::string_view n) const {
  return Get<std::vector<PartialShape>>(n, AttrType::kShapeList);
}
const std::vector<std::string>& AttrMap::GetStringList(std::string_view n) const {
  return Get<std::vector<std::string>>(n, AttrType::kStringList);
}
const std::vector<FuncRef>& AttrMap::GetFuncList(std::string_view n) const {
  return Get<std::vector<FuncRef>>(n, AttrType::kFuncList);
}

}  // namespace treadle
