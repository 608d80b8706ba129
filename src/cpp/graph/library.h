// The function library of a GraphDef: every function's signature, its
// validated body, and its executable, planned on first call. After Build the
// library is immutable apart from those lazily planned executables (each
// created once under std::call_once), so any number of threads may share it.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph/graph_ir.h"
#include "treadle/graph.pb.h"

namespace treadle::graph {

class Executable;

// Function calls may nest at most this deep (a chain f -> g -> h counts 3):
// it bounds the native stack that running them takes. Recursion is rejected.
constexpr int kMaxCallDepth = 64;

struct FunctionSignature {
  std::string name;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  bool is_stateful = false;
};

// A function traced in this process (graph_builder.h), ready to join the
// libraries of the functions that call it: its body is validated and typed,
// but which library functions its nodes call is resolved per library.
struct LibraryFunction {
  FunctionSignature signature;
  std::shared_ptr<const Body> body;
};

// Always held by a shared_ptr (Build makes it so): a kernel may keep the
// library of the executable it runs in alive (FunctionCaller::library).
class FunctionLibrary : public std::enable_shared_from_this<FunctionLibrary> {
 public:
  // Validates every function of `lib` (signatures, bodies, calls between
  // functions: no recursion, nesting at most kMaxCallDepth). Throws
  // InvalidArgument / NotFound naming the function and node.
  static std::shared_ptr<FunctionLibrary> Build(const proto::FunctionDefLibrary& lib);
  // The same checks for functions already in memory: no parsing and no
  // second inference, only the calls between them are resolved and checked.
  static std::shared_ptr<FunctionLibrary> Build(const std::vector<std::shared_ptr<const LibraryFunction>>& functions);
  ~FunctionLibrary();

  int Find(std::string_view name) const;  // -1 when there is no such function
  int size() const { return static_cast<int>(entries_.size()); }
  const FunctionSignature& signature(int i) const { return entries_[i]->signature; }
  const Body& body(int i) const { return *entries_[i]->body; }
  // Function i as a LibraryFunction, to join another library (a loaded loom's functions in a traced graph).
  std::shared_ptr<const LibraryFunction> Function(int i) const;
  // True when running the function has effects beyond its results (prints,
  // Python calls, stateful ops), so a call must run even if unused.
  bool effectful(int i) const { return entries_[i]->effectful; }

  // The function's executable, planned on the first request.
  const Executable& Compiled(int i) const;

  // Sets each node's `effectful` flag (from its op, or from the functions it
  // calls) and checks that the calls it makes nest at most kMaxCallDepth deep.
  void ResolveEffects(Body* body) const;

 private:
  struct Entry {
    FunctionSignature signature;
    std::shared_ptr<Body> body;
    bool effectful = false;
    int height = 0;  // longest chain of calls starting here, counting itself
    mutable std::once_flag planned;
    mutable std::unique_ptr<Executable> executable;
  };
  FunctionLibrary() = default;
  void AddSignature(FunctionSignature signature);  // checks the name is valid and new
  void CheckCallGraph();
  void Visit(int i, std::vector<int>* path, std::vector<int>* state);

  std::vector<std::unique_ptr<Entry>> entries_;
  std::unordered_map<std::string, int> index_;
};

// A signature's argument list from the wire: names valid and unique, dtypes
// valid; an ArgDef without a shape has an unknown shape.
std::vector<TensorSpec> ParseArgSpecs(const google::protobuf::RepeatedPtrField<proto::ArgDef>& args,
                                      const std::string& where);

}  // namespace treadle::graph
