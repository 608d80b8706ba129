// Error types thrown by the C++ core. The bindings translate each to a Python
// exception: Status codes become td.errors.* classes, StaticError becomes the
// TypeError/ValueError TensorFlow raises while building a graph (and
// InvalidArgumentError when the same problem is met while executing eagerly).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace treadle {

enum class Code {
  kCancelled = 1,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kFailedPrecondition = 9,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kDataLoss = 15,
};

// A run-time error with a TensorFlow-style status code.
class Error : public std::runtime_error {
 public:
  Error(Code code, std::string msg) : std::runtime_error(std::move(msg)), code_(code) {}
  Code code() const { return code_; }

 private:
  Code code_;
};

// An error found from dtypes and shapes alone, before any data is touched.
enum class StaticKind { kType, kValue };
class StaticError : public std::runtime_error {
 public:
  StaticError(StaticKind kind, std::string msg) : std::runtime_error(std::move(msg)), kind_(kind) {}
  StaticKind kind() const { return kind_; }

 private:
  StaticKind kind_;
};

namespace detail {
inline void StrAppend(std::ostringstream&) {}
template <typename T, typename... Rest>
void StrAppend(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  StrAppend(os, rest...);
}
}  // namespace detail

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  detail::StrAppend(os, args...);
  return os.str();
}

template <typename... Args>
[[noreturn]] void ThrowInvalidArgument(const Args&... args) {
  throw Error(Code::kInvalidArgument, StrCat(args...));
}
template <typename... Args>
[[noreturn]] void ThrowTypeError(const Args&... args) {
  throw StaticError(StaticKind::kType, StrCat(args...));
}
template <typename... Args>
[[noreturn]] void ThrowValueError(const Args&... args) {
  throw StaticError(StaticKind::kValue, StrCat(args...));
}

}  // namespace treadle
