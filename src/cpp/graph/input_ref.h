// Parsing the input strings of a NodeDef: "node" (output 0), "node:k",
// "^node" (a control dependency), or an argument name inside a function.
#pragma once

#include <string>
#include <string_view>

namespace treadle::graph {

struct ParsedInput {
  std::string name;
  int output = 0;
  bool control = false;
  bool has_index = false;  // ":k" was written
};

// Throws InvalidArgument starting with `where` for malformed strings (empty
// name, non-numeric or out-of-range index).
ParsedInput ParseInput(std::string_view text, const std::string& where);

// Node and argument names: non-empty, no ':' and no leading '^'.
bool IsValidName(std::string_view name);

}  // namespace treadle::graph
