// Op attributes: the compile-time parameters of a node (a dtype to cast to, a
// `keepdims` flag, the number of splits). They are typed by the op's AttrDef.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

namespace treadle {

enum class AttrType { kInt, kFloat, kBool, kString, kType, kShape, kIntList, kTypeList, kTensor, kFunc, kShapeList,
                      kStringList, kFuncList };
const char* AttrTypeName(AttrType t);

// A reference to a library function, by name (used by control-flow ops).
struct FuncRef {
  std::string name;
  bool operator==(const FuncRef& o) const { return name == o.name; }
};

// The alternatives are listed in AttrType order.
using AttrValue = std::variant<int64_t, double, bool, std::string, DType, PartialShape, std::vector<int64_t>,
                               std::vector<DType>, Tensor, FuncRef, std::vector<PartialShape>,
                               std::vector<std::string>, std::vector<FuncRef>>;

AttrType AttrValueType(const AttrValue& v);

// A small ordered map; ops have a handful of attributes, so a vector beats a hash map.
class AttrMap {
 public:
  void Set(std::string name, AttrValue value);
  const AttrValue* Find(std::string_view name) const;
  bool empty() const { return items_.empty(); }
  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }

  // Typed getters; they throw InvalidArgument naming the attribute when it is
  // missing or of another type.
  int64_t GetInt(std::string_view name) const;
  double GetFloat(std::string_view name) const;
  bool GetBool(std::string_view name) const;
  const std::string& GetString(std::string_view name) const;
  DType GetType(std::string_view name) const;
  const PartialShape& GetShape(std::string_view name) const;
  const std::vector<int64_t>& GetIntList(std::string_view name) const;
  const std::vector<DType>& GetTypeList(std::string_view name) const;
  const Tensor& GetTensor(std::string_view name) const;
  const FuncRef& GetFunc(std::string_view name) const;
  const std::vector<PartialShape>& GetShapeList(std::string_view name) const;
  const std::vector<std::string>& GetStringList(std::string_view name) const;
  const std::vector<FuncRef>& GetFuncList(std::string_view name) const;

 private:
  template <typename T> const T& Get(std::string_view name, AttrType expected) const;
  std::vector<std::pair<std::string, AttrValue>> items_;
};

}  // namespace treadle
