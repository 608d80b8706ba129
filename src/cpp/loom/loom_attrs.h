// A loom's description as attrs of the Loom ops (LoomRun, the unrolled steps):
// its metadata as plain typed lists, and its ops' functions as a list(func)
// attr naming functions of the enclosing library, so that a graph holding a
// loom is an ordinary graph with an ordinary function library.
#pragma once

#include <cstdint>
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

// The loom attrs of an op's attrs (the others, Tinputs and such, left out),
// a hash of them, and whether two ops' loom attrs are equal: what the
// kernels key their runtimes by, without rebuilding the metadata per run.
AttrMap LoomAttrsOf(const AttrMap& attrs);
uint64_t HashLoomAttrs(const AttrMap& attrs);
bool SameLoomAttrs(const AttrMap& a, const AttrMap& b);

// The LoomMetadata those attrs describe, function names included.
// InvalidArgument when the lists disagree in length or a count runs past its
// list; the metadata itself is validated by LoomSpec::FromProto.
proto::LoomMetadata MetadataFromAttrs(const AttrMap& attrs);

}  // namespace treadle::loom
