#include "ops/op_helpers.h"

#include <algorithm>
#include <string>

#include "util/errors.h"

namespace treadle {

DTypeFn SameDTypeAsInput(int i) {
  return [i](const InferContext& c) { return std::vector<DType>{c.dtypes[i]}; };
}
DTypeFn FixedDType(DType t) {
  return [t](const InferContext&) { return std::vector<DType>{t}; };
}
DTypeFn DTypeFromAttr(const char* attr) {
  return [attr](const InferContext& c) { return std::vector<DType>{c.attrs.GetType(attr)}; };
}

namespace {

std::string TypeListString(const std::vector<DType>& types) {
  std::string s = "(";
  for (size_t i = 0; i < types.size(); ++i) s += (i ? ", " : "") + std::string(DTypeName(types[i]));
  return s + ")";
}

}  // namespace

void CheckInputTypesMatchAttr(const InferContext& c, const char* attr, size_t first) {
  const std::vector<DType>& declared = c.attrs.GetTypeList(attr);
  const auto begin = c.dtypes.begin() + static_cast<std::ptrdiff_t>(std::min(first, c.dtypes.size()));
  if (!std::equal(declared.begin(), declared.end(), begin, c.dtypes.end())) {
    ThrowTypeError(c.op.name, ": attr '", attr, "' is ", TypeListString(declared), " but the inputs are ",
                   TypeListString(std::vector<DType>(begin, c.dtypes.end())));
  }
}

ShapeFn SameShapeAsInput(int i) {
  return [i](const InferContext& c) { return std::vector<PartialShape>{c.shapes[i]}; };
}
ShapeFn ScalarShape() {
  return [](const InferContext&) { return std::vector<PartialShape>{PartialShape(Dims{})}; };
}
ShapeFn BroadcastShapeOfInputs() {
  return [](const InferContext& c) {
    PartialShape s = c.shapes.empty() ? PartialShape(Dims{}) : c.shapes[0];
    for (size_t i = 1; i < c.shapes.size(); ++i) s = BroadcastPartial(s, c.shapes[i]);
    return std::vector<PartialShape>{s};
  };
}

Dims BroadcastDims(const Dims& a, const Dims& b) {
  if (a == b) return a;
  size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else ThrowValueError("Incompatible shapes: ", DimsToString(a), " vs. ", DimsToString(b));
  }
  return out;
}

PartialShape BroadcastPartial(const PartialShape& a, const PartialShape& b) {
  if (!a.known_rank || !b.known_rank) return PartialShape::Unknown();
  if (a.fully_defined() && b.fully_defined()) return PartialShape(BroadcastDims(a.dims, b.dims));
  size_t rank = std::max(a.dims.size(), b.dims.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.dims.size() ? 1 : a.dims[i - (rank - a.dims.size())];
    int64_t db = i < rank - b.dims.size() ? 1 : b.dims[i - (rank - b.dims.size())];
    if (da == 1) out[i] = db;
    else if (db == 1) out[i] = da;
    else if (da < 0) out[i] = db;  // unknown vs n: n if they broadcast at all (or unknown vs unknown)
    else if (db < 0) out[i] = da;
    else if (da == db) out[i] = da;
    else ThrowValueError("Incompatible shapes: ", DimsToString(a.dims), " vs. ", DimsToString(b.dims));
  }
  return PartialShape(out);
}

int64_t NormalizeAxis(const OpDef& op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    ThrowValueError(op.name, ": axis ", axis, " is out of range for a tensor of rank ", rank,
                         " (expected -", rank, " <= axis < ", rank, ")");
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace treadle
