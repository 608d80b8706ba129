// A loom's description as attrs of the Loom ops (LoomRun, the unrolled steps):
// its metadata as plain typed lists, and its ops' functions as a list(func)
// attr naming functions of the enclosing library, so that a graph holding a
// loom is an ordinary graph with an ordinary function library.
#pragma once

#include <vector>

#include "ops/registry.h"
#include "treadle/loom.pb.h"

namespace treadle::loom {

// The attr naming the library functions of the loom's ops.
inline constexpr const char* kFunctionsAttr = "functions";

// The AttrDefs describing a loom (all required), for the Loom ops' OpDefs.
std::vector<AttrDef> LoomAttrDefs();

// `metadata` (with its ops' function names) as the attrs LoomAttrDefs lists.
void MetadataToAttrs(const proto::LoomMetadata& metadata, AttrMap* attrs);

// The LoomMetadata those attrs describe, function names included.
// InvalidArgument when the lists disagree in length or a count runs past its
// list; the metadata itself is validated by LoomSpec::FromProto.
proto::LoomMetadata MetadataFromAttrs(const AttrMap& attrs);

}  // namespace treadle::loom
