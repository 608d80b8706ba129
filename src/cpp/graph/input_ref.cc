#include "graph/input_ref.h"

#include "util/errors.h"

namespace treadle::graph {

bool IsValidName(std::string_view name) {
  return !name.empty() && name[0] != '^' && name.find(':') == std::string_view::npos;
}

ParsedInput ParseInput(std::string_view text, const std::string& where) {
  ParsedInput out;
  std::string_view rest = text;
  if (!rest.empty() && rest[0] == '^') {
    out.control = true;
    rest.remove_prefix(1);
  }
  size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos) {
    std::string_view digits = rest.substr(colon + 1);
    // At most 9 digits keeps the index inside int.
    if (out.control || digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos) {
      ThrowInvalidArgument(where, " '", text, "' is malformed (expected \"node\", \"node:k\" or \"^node\")");
    }
    out.output = std::stoi(std::string(digits));
    out.has_index = true;
    rest = rest.substr(0, colon);
  }
  if (!IsValidName(rest)) {
    ThrowInvalidArgument(where, " '", text, "' is malformed (expected \"node\", \"node:k\" or \"^node\")");
  }
  out.name = std::string(rest);
  return out;
}

}  // namespace treadle::graph
