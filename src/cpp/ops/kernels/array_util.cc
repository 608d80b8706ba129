#include "ops/kernels/array_util.h"

namespace treadle {

void ReplicateBlock(DType t, char* dst, int64_t block, int64_t copies) {
  const int64_t total = block * copies;
  const int64_t esize = static_cast<int64_t>(DTypeSize(t));
  int64_t filled = block;
  while (filled < total) {
    const int64_t n = std::min(filled, total - filled);
    CopyElements(t, dst + filled * esize, dst, n);
    filled += n;
  }
}

int64_t DimProduct(const Dims& dims, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= dims[i];
  return n;
}

std::vector<int64_t> ReadInts(const Tensor& t) {
  std::vector<int64_t> out(t.num_elements());
  if (t.dtype() == DType::kInt32) {
    std::copy_n(t.data<int32_t>(), out.size(), out.begin());
  } else if (t.dtype() == DType::kInt64) {
    std::copy_n(t.data<int64_t>(), out.size(), out.begin());
  } else {
    ThrowTypeError("expected an int32 or int64 tensor, got ", DTypeName(t.dtype()));
  }
  return out;
}

std::optional<int64_t> ScalarIntInput(const InferContext& c, int i, const char* arg) {
  const PartialShape& s = c.shapes[i];
  if (s.known_rank && s.rank() > 1) {
    ThrowValueError(c.op.name, ": '", arg, "' must be a scalar, got shape ", s.ToString());
  }
  if (s.known_rank && s.rank() == 1 && s.dims[0] >= 0 && s.dims[0] != 1) {
    ThrowValueError(c.op.name, ": '", arg, "' must be a scalar, got shape ", s.ToString());
  }
  auto v = c.IntValues(i);
  if (!v) return std::nullopt;
  if (v->size() != 1) {
    ThrowValueError(c.op.name, ": '", arg, "' must be a scalar, got ", v->size(), " values");
  }
  return (*v)[0];
}

void CheckInputRank(const InferContext& c, int i, int rank, const char* what) {
  const PartialShape& s = c.shapes[i];
  if (s.known_rank && s.rank() != rank) {
    ThrowValueError(c.op.name, ": '", what, "' must be ", rank == 0 ? "a scalar" : rank == 1 ? "a vector" : "",
                    rank > 1 ? StrCat("of rank ", rank) : "", ", got shape ", s.ToString());
  }
}

void CheckOutputRank(const OpDef& op, int64_t rank) {
  if (rank > kMaxRank) {
    ThrowValueError(op.name, ": the result would have rank ", rank, ", above the limit of ", kMaxRank);
  }
}

int64_t CheckedProduct(const OpDef& op, const Dims& dims) {
  // Like NumElements (which every tensor's shape must pass), but a ValueError
  // naming the op, and tolerant of unknown (negative) dimensions.
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : dims) {
    if (d < 0) continue;
    if (d > kMaxElements) overflow = true;
    else if (d != 0 && n > kMaxElements / d) overflow = true;
    else n *= d;
  }
  if (overflow) ThrowValueError(op.name, ": shape ", DimsToString(dims), " has more than 2^40 elements");
  return n;
}

void InterleaveCopy(DType t, int64_t outer, const std::vector<const char*>& inputs,
                    const std::vector<int64_t>& chunks, char* out) {
  const int64_t esize = static_cast<int64_t>(DTypeSize(t));
  std::vector<const char*> src = inputs;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < src.size(); ++i) {
      CopyElements(t, out, src[i], chunks[i]);
      out += chunks[i] * esize;
      src[i] += chunks[i] * esize;
    }
  }
}

void DeinterleaveCopy(DType t, int64_t outer, const char* in, const std::vector<char*>& outputs,
                      const std::vector<int64_t>& chunks) {
  const int64_t esize = static_cast<int64_t>(DTypeSize(t));
  std::vector<char*> dst = outputs;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < dst.size(); ++i) {
      CopyElements(t, dst[i], in, chunks[i]);
      in += chunks[i] * esize;
      dst[i] += chunks[i] * esize;
    }
  }
}

// Bounds the output list an attribute can ask for before anything is allocated.
constexpr int64_t kMaxOutputs = int64_t{1} << 24;

DTypeFn RepeatedDTypeOfInput(int i, const char* num_attr) {
  return [i, num_attr](const InferContext& c) {
    int64_t n = c.attrs.GetInt(num_attr);
    if (n < 0) ThrowValueError(c.op.name, ": attribute '", num_attr, "' must be >= 0, got ", n);
    if (n > kMaxOutputs) ThrowValueError(c.op.name, ": attribute '", num_attr, "' is too large: ", n);
    return std::vector<DType>(static_cast<size_t>(n), c.dtypes[i]);
  };
}

}  // namespace treadle
