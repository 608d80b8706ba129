// State shared by the seeded random ops (see random_ops.cc).
#pragma once

namespace treadle {

// Restarts the stream of every seeded random op, so that after
// td.random.set_seed the same calls give the same values again (TensorFlow
// does this by clearing its eager kernel cache).
void ResetRandomOpCounters();

}  // namespace treadle
