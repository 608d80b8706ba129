// Finding a loom's runtime from its serialized LoomDef (the attr the Loom ops
// carry), and a schedule from the tensor a Loom op is given.
#pragma once

#include <memory>
#include <string>

#include "loom/runtime.h"

namespace treadle::loom {

// The runtime of a serialized LoomDef in base64 (attrs that hold it are
// text, so graphs print and round-trip through Python unchanged), built and
// validated on first use and kept while it is among the most recently used
// (graphs name their loom by value, so a saved graph runs in a process that
// never built the loom, and an evicted runtime is simply built again).
std::shared_ptr<const LoomRuntime> RuntimeForLoomDef(const std::string& loom_def_base64);

// A finalised schedule from a variant tensor (a schedule made in this
// process), a string scalar (one serialized WeaverMessage) or a 1-D string
// tensor (messages merged into one batch). Messages are fully validated.
std::shared_ptr<const Schedule> ScheduleFromTensor(const std::shared_ptr<const LoomSpec>& spec, const Tensor& t);

// Parses and merges serialized messages (any of them empty: none) into one schedule.
std::shared_ptr<const Schedule> MergeMessages(const std::shared_ptr<const LoomSpec>& spec,
                                              const std::string* messages, size_t count);

}  // namespace treadle::loom
