// Finding the runtime of the loom a Loom op's attrs describe, and a schedule
// from the tensor a Loom op is given.
#pragma once

#include <memory>
#include <string>

#include "graph/library.h"
#include "loom/runtime.h"
#include "ops/registry.h"

namespace treadle::loom {

// The runtime of the loom `attrs` describe (loom_attrs.h), running the
// functions their `functions` attr names in the library of the executable the
// op runs in (`functions`, the kernel's FunctionCaller), or, for an eager op
// (`functions` null), in the library the Loom registered with
// RegisterEagerLibrary for this loom. Built and validated on first use and kept while it is
// among the most recently used, keyed by that library and the loom's
// metadata; NotFound when no library holds the functions.
std::shared_ptr<const LoomRuntime> RuntimeForAttrs(const AttrMap& attrs, const FunctionCaller* functions);

// Eager runs of a loom's ops find its functions here, by the loom's
// metadata: the Loom object registers the library of its ops' functions
// (py_loom.cc), which stays registered while something holds it.
void RegisterEagerLibrary(const proto::LoomMetadata& metadata,
                          const std::shared_ptr<const graph::FunctionLibrary>& library);

// A runtime for `metadata` (function names included) over `library`, not
// cached: what a Loom checks when it is built or loaded.
std::shared_ptr<const LoomRuntime> BuildRuntime(const proto::LoomMetadata& metadata,
                                                std::shared_ptr<const graph::FunctionLibrary> library);

// A finalised schedule from a variant tensor (a schedule made in this
// process), a string scalar (one serialized WeaverMessage) or a 1-D string
// tensor (messages merged into one batch). Messages are fully validated.
std::shared_ptr<const Schedule> ScheduleFromTensor(const std::shared_ptr<const LoomSpec>& spec, const Tensor& t);

// Parses and merges serialized messages (any of them empty: none) into one schedule.
std::shared_ptr<const Schedule> MergeMessages(const std::shared_ptr<const LoomSpec>& spec,
                                              const std::string* messages, size_t count);

}  // namespace treadle::loom
