#include "graph/print_format.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tensor/half.h"

namespace treadle::graph {

namespace {

// Shortest of the two usual precisions that reads back as the same value
// (6 then 9 significant digits for float32, 15 then 17 for float64).
template <typename T>
std::string FormatFloat(T v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  constexpr bool kSingle = sizeof(T) == 4;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", kSingle ? FLT_DIG : DBL_DIG, static_cast<double>(v));
  T back = kSingle ? static_cast<T>(std::strtof(buf, nullptr)) : static_cast<T>(std::strtod(buf, nullptr));
  if (back != v) std::snprintf(buf, sizeof buf, "%.*g", kSingle ? FLT_DIG + 3 : DBL_DIG + 2, static_cast<double>(v));
  return buf;
}

// C-style escapes for quotes, backslashes and control bytes; bytes >= 0x80
// pass through so UTF-8 text stays readable.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    switch (ch) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '"': out += "\\\""; break;
      case '\'': out += "\\'"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (ch < 0x20 || ch == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\%03o", ch);
          out += buf;
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out + "\"";
}

std::string FormatElement(const Tensor& t, int64_t i, bool quote_strings) {
  switch (t.dtype()) {
    case DType::kFloat32: return FormatFloat(t.data<float>()[i]);
    case DType::kFloat64: return FormatFloat(t.data<double>()[i]);
    case DType::kInt32: return std::to_string(t.data<int32_t>()[i]);
    case DType::kInt64: return std::to_string(t.data<int64_t>()[i]);
    case DType::kBool: return t.data<bool>()[i] ? "1" : "0";  // as TensorFlow prints them
    case DType::kInt8: return std::to_string(t.data<int8_t>()[i]);
    case DType::kUInt8: return std::to_string(t.data<uint8_t>()[i]);
    case DType::kFloat16: return FormatFloat(F16ToF32(t.data<uint16_t>()[i]));
    case DType::kBFloat16: return FormatFloat(BF16ToF32(t.data<uint16_t>()[i]));
    case DType::kString: {
      const std::string& s = t.data<std::string>()[i];
      return quote_strings ? Quote(s) : s;
    }
    default: return "?";
  }
}

struct Printer {
  const Tensor& t;
  int64_t summarize;
  Dims strides;
  std::string out;

  // Between neighbours of dimension `dim`: a space in the innermost one;
  // otherwise one newline per inner dimension and an indent past the brackets.
  void Spacing(int dim) {
    const int rank = t.rank();
    if (dim == rank - 1) {
      out += ' ';
      return;
    }
    out.append(rank - dim - 1, '\n');
    out.append(dim + 1, ' ');
  }

  void Dim(int dim, int64_t offset) {
    if (dim == t.rank()) {
      out += FormatElement(t, offset, true);
      return;
    }
    const int64_t n = t.dim(dim);
    const bool elide = summarize >= 0 && n > 2 * summarize;
    out += '[';
    bool first = true;
    for (int64_t i = 0; i < n; ++i) {
      if (elide && i == summarize) {
        if (!first) Spacing(dim);
        out += "...";
        first = false;
        i = n - summarize - 1;  // continue with the last `summarize`
        continue;
      }
      if (!first) Spacing(dim);
      first = false;
      Dim(dim + 1, offset + i * strides[dim]);
    }
    out += ']';
  }
};

}  // namespace

std::string FormatTensorForPrint(const Tensor& t, int64_t summarize) {
  if (t.rank() == 0) return FormatElement(t, 0, false);
  Printer p{t, summarize, RowMajorStrides(t.shape()), {}};
  p.Dim(0, 0);
  return std::move(p.out);
}

}  // namespace treadle::graph
