#include "tensor/shape.h"

#include <algorithm>

#include "util/errors.h"

namespace treadle {

int64_t NumElements(const Dims& dims) {
  // The bound applies to the product of the nonzero dimensions too: an empty
  // tensor of shape [0, 2^62, 4] would overflow its strides and every size
  // computed from its other dimensions.
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t d : dims) {
    if (d < 0) ThrowInvalidArgument("shape ", DimsToString(dims), " has a negative dimension");
    if (d == 0) {
      empty = true;
      continue;
    }
    if (__builtin_mul_overflow(nonzero, d, &nonzero) || nonzero > kMaxElements) {
      ThrowInvalidArgument("shape ", DimsToString(dims), std::find(dims.begin(), dims.end(), 0) != dims.end()
                                                             ? " has dimensions whose product exceeds 2^40"
                                                             : " has more than 2^40 elements");
    }
  }
  return empty ? 0 : nonzero;
}

std::string DimsToString(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i] < 0 ? std::string("?") : std::to_string(dims[i]);
  }
  return s + "]";
}

Dims RowMajorStrides(const Dims& dims) {
  Dims strides(dims.size());
  int64_t s = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = s;
    s *= dims[i];
  }
  return strides;
}

bool PartialShape::fully_defined() const {
  if (!known_rank) return false;
  for (int64_t d : dims) if (d < 0) return false;
  return true;
}

std::string PartialShape::ToString() const {
  if (!known_rank) return "<unknown>";
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i] < 0 ? std::string("None") : std::to_string(dims[i]);
  }
  if (dims.size() == 1) s += ",";
  return s + ")";
}

bool PartialShape::IsCompatibleWith(const Dims& d) const {
  if (!known_rank) return true;
  if (d.size() != dims.size()) return false;
  for (size_t i = 0; i < d.size(); ++i) {
    if (dims[i] >= 0 && dims[i] != d[i]) return false;
  }
  return true;
}

}  // namespace treadle
