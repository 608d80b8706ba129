// Paths as treadle opens them. A path from Python may hold a NUL byte, which
// the C library would take as its end: "d/victim\0.tfrecord" would open
// "d/victim". Python's open() refuses such paths; so does treadle, with the
// same ValueError.
#pragma once

#include <string>

#include "util/errors.h"

namespace treadle {

inline const std::string& CheckedPath(const std::string& path) {
  if (path.find('\0') != std::string::npos) ThrowValueError("embedded null byte in the path ", path.c_str());
  return path;
}

}  // namespace treadle
