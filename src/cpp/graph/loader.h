// Entry points from serialized GraphDefs to runnable Executables.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/executable.h"
#include "graph/library.h"

namespace treadle::graph {

// A parsed and fully validated GraphDef: its function library and its
// top-level nodes (which may be empty when only library functions are run).
struct LoadedGraph {
  std::shared_ptr<const FunctionLibrary> library;
  std::shared_ptr<const Body> graph;
};

// Parses `size` bytes as a GraphDef (DataLoss when they are not one), checks
// versions.min_consumer against kGraphVersion, and validates the library and
// the nodes. Throws InvalidArgument / NotFound naming what is wrong.
LoadedGraph LoadGraphDef(const void* data, size_t size);

// An Executable of the top-level graph: `inputs` name Placeholder nodes (in
// argument order), `outputs` are "node" or "node:k". The Executable keeps the
// library alive.
std::shared_ptr<const Executable> MakeGraphExecutable(const LoadedGraph& graph, const std::vector<std::string>& inputs,
                                                      const std::vector<std::string>& outputs);

// The Executable of library function `name` (NotFound when there is none),
// taking its signature's arguments. It keeps the library alive.
std::shared_ptr<const Executable> MakeFunctionExecutable(const LoadedGraph& graph, const std::string& name);

}  // namespace treadle::graph
