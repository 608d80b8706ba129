#include "graph/shape_merge.h"

namespace treadle::graph {

std::optional<PartialShape> MergeShapes(const PartialShape& a, const PartialShape& b) {
  if (!a.known_rank) return b;
  if (!b.known_rank) return a;
  if (a.dims.size() != b.dims.size()) return std::nullopt;
  Dims out(a.dims.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = a.dims[i], db = b.dims[i];
    if (da >= 0 && db >= 0 && da != db) return std::nullopt;
    out[i] = da >= 0 ? da : db;
  }
  return PartialShape(std::move(out));
}

PartialShape GeneralizeShapes(const PartialShape& a, const PartialShape& b) {
  if (!a.known_rank || !b.known_rank || a.dims.size() != b.dims.size()) return PartialShape::Unknown();
  Dims out(a.dims.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = a.dims[i] == b.dims[i] ? a.dims[i] : kUnknownDim;
  return PartialShape(std::move(out));
}

bool IsMoreSpecific(const PartialShape& narrow, const PartialShape& wide) {
  if (!narrow.known_rank) return false;
  if (!wide.known_rank) return true;
  for (size_t i = 0; i < narrow.dims.size() && i < wide.dims.size(); ++i) {
    if (narrow.dims[i] >= 0 && wide.dims[i] < 0) return true;
  }
  return false;
}

}  // namespace treadle::graph
