// The GraphDef format version this build reads and writes. A graph whose
// versions.min_consumer is above it needs a newer treadle and is rejected.
#pragma once

namespace treadle::graph {

constexpr int kGraphVersion = 1;

}  // namespace treadle::graph
