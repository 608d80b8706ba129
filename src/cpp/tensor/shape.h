// Shapes. `Dims` is a concrete shape (every dimension known); `PartialShape`
// is what graph construction knows: possibly unknown rank, and -1 for each
// unknown dimension.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace treadle {

using Dims = std::vector<int64_t>;
constexpr int64_t kUnknownDim = -1;
// Limits that keep a hostile shape from overflowing size arithmetic.
constexpr int kMaxRank = 64;
constexpr int64_t kMaxElements = int64_t{1} << 40;

int64_t NumElements(const Dims& dims);  // product; throws InvalidArgument if it overflows kMaxElements
std::string DimsToString(const Dims& dims);  // "[2,3]"
// Row-major strides in elements.
Dims RowMajorStrides(const Dims& dims);

struct PartialShape {
  bool known_rank = false;
  Dims dims;  // kUnknownDim where unknown; empty when !known_rank

  PartialShape() = default;
  explicit PartialShape(Dims d) : known_rank(true), dims(std::move(d)) {}
  static PartialShape Unknown() { return PartialShape(); }
  static PartialShape UnknownOfRank(int rank) { return PartialShape(Dims(rank, kUnknownDim)); }

  int rank() const { return known_rank ? static_cast<int>(dims.size()) : -1; }
  bool fully_defined() const;
  bool operator==(const PartialShape& o) const { return known_rank == o.known_rank && dims == o.dims; }
  std::string ToString() const;  // "(2, None)" or "<unknown>"
  // True when a tensor of shape `d` could have this shape.
  bool IsCompatibleWith(const Dims& d) const;
};

}  // namespace treadle
