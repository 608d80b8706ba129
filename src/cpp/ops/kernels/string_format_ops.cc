// AsString: numbers, bools and strings formatted as strings, as TensorFlow's
// (printf conversions: %f / %e / %g for floats, %d for integers, true/false
// for bools; `width`, `fill` (a printf flag) and `precision` as TensorFlow
// applies them). Strings have no gradient.
#include <cstdio>
#include <string>
#include <vector>

#include "ops/dispatch.h"
#include "ops/op_helpers.h"
#include "ops/registry.h"
#include "util/errors.h"

namespace treadle {
namespace {

bool IsFloat(DType t) { return t == DType::kFloat32 || t == DType::kFloat64; }

// The printf format of one element of dtype `t`, checked against the attrs.
std::string AsStringFormat(DType t, const AttrMap& attrs) {
  const int64_t precision = attrs.GetInt("precision");
  const int64_t width = attrs.GetInt("width");
  const bool scientific = attrs.GetBool("scientific"), shortest = attrs.GetBool("shortest");
  const std::string& fill = attrs.GetString("fill");
  if (scientific && shortest) ThrowInvalidArgument("AsString: Cannot select both scientific and shortest notation");
  if (fill.size() > 1) ThrowInvalidArgument("AsString: Fill string must be one or fewer characters");
  if (!IsFloat(t) && (precision > -1 || scientific || shortest)) {
    ThrowInvalidArgument("AsString: precision, scientific and shortest apply to floats, not ", DTypeName(t));
  }
  std::string format = "%";
  if (!fill.empty()) {
    const char c = fill[0];
    if (c != ' ' && c != '+' && c != '-' && c != '0' && c != '#') {
      ThrowInvalidArgument("AsString: Fill argument not supported: \"", fill, "\" (one of ' ', '+', '-', '0', '#')");
    }
    format += c;
  }
  if (width > -1) format += std::to_string(width);
  if (precision > -1) format += "." + std::to_string(precision);
  if (IsFloat(t)) format += shortest ? "g" : scientific ? "e" : "f";
  else if (t == DType::kInt32 || t == DType::kInt64) format += "lld";
  else format += "s";  // bools (as true/false) and strings
  return format;
}

template <typename V>
std::string Format(const std::string& format, V value) {
  const int n = std::snprintf(nullptr, 0, format.c_str(), value);
  std::string out(static_cast<size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, format.c_str(), value);
  return out;
}

void AsStringKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const std::string format = AsStringFormat(in.dtype(), ctx.attrs);
  Tensor& out = ctx.allocate_output(0, in.shape());
  std::string* po = out.data<std::string>();
  const int64_t n = in.num_elements();
  switch (in.dtype()) {
    case DType::kFloat32:
      for (int64_t i = 0; i < n; ++i) po[i] = Format(format, static_cast<double>(in.data<float>()[i]));
      break;
    case DType::kFloat64:
      for (int64_t i = 0; i < n; ++i) po[i] = Format(format, in.data<double>()[i]);
      break;
    case DType::kInt32:
      for (int64_t i = 0; i < n; ++i) po[i] = Format(format, static_cast<long long>(in.data<int32_t>()[i]));
      break;
    case DType::kInt64:
      for (int64_t i = 0; i < n; ++i) po[i] = Format(format, static_cast<long long>(in.data<int64_t>()[i]));
      break;
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) po[i] = Format(format, in.data<bool>()[i] ? "true" : "false");
      break;
    case DType::kString:
      for (int64_t i = 0; i < n; ++i) po[i] = Format(format, in.data<std::string>()[i].c_str());
      break;
    default:
      ThrowUnsupported("AsString", in.dtype());
  }
}

OpDef MakeAsString() {
  OpDef op;
  op.name = "AsString";
  op.inputs = {{"input", false, "T", kAllTypes}};
  op.outputs = {"output"};
  op.attrs = {{"precision", AttrType::kInt, AttrValue(int64_t{-1})},
              {"scientific", AttrType::kBool, AttrValue(false)},
              {"shortest", AttrType::kBool, AttrValue(false)},
              {"width", AttrType::kInt, AttrValue(int64_t{-1})},
              {"fill", AttrType::kString, AttrValue(std::string(""))}};
  op.dtype_fn = FixedDType(DType::kString);
  op.shape_fn = SameShapeAsInput(0);
  op.kernel = AsStringKernel;
  op.doc = "Each element of `input` formatted as a string (TensorFlow's AsString).";
  return op;
}

OpRegistrar as_string_op(MakeAsString());

}  // namespace
}  // namespace treadle
