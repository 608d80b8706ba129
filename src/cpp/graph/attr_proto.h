// NodeDef attributes on the wire -> the core's typed AttrValue.
#pragma once

#include <string>

#include "ops/attr.h"
#include "treadle/graph.pb.h"

namespace treadle::graph {

// Converts `value` to an AttrValue of `type` (the op's AttrDef says which).
// Throws InvalidArgument starting with `where` (e.g. "node 'x' attr 'dtype'")
// when the value is missing, of another type, or malformed.
AttrValue AttrFromProto(const proto::AttrValue& value, AttrType type, const std::string& where);

// Writes a canonical attribute value to the wire (the inverse of AttrFromProto).
void AttrToProto(const AttrValue& value, proto::AttrValue* out);

// Describes which kind of value a wire attr holds ("int", "list(type)", ...).
std::string ProtoAttrKind(const proto::AttrValue& value);

}  // namespace treadle::graph
