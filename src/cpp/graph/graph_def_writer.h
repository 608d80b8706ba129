// Protobuf for graphs traced in this process, written only when a user asks
// for it (td.save, as_graph_def(), function_def(), printing): tracing and
// running never serialize.
#pragma once

#include <vector>

#include "graph/graph_builder.h"
#include "treadle/graph.pb.h"

namespace treadle::graph {

// The FunctionDef of `fn`: its signature, its nodes (arguments referred to by
// name), the ret of each output ("output_0", ...) and its control rets.
void WriteFunctionDef(const LibraryFunction& fn, proto::FunctionDef* out);

// A GraphDef (versions set) of the nodes of `builder` listed in `order`,
// Placeholders included, with `library` as its function library.
void WriteGraphDef(const GraphBuilder& builder, const std::vector<int>& order,
                   const std::vector<std::shared_ptr<const LibraryFunction>>& library, proto::GraphDef* out);

// A GraphDef with no nodes whose library holds `library`.
void WriteLibraryGraphDef(const std::vector<std::shared_ptr<const LibraryFunction>>& library, proto::GraphDef* out);

}  // namespace treadle::graph
