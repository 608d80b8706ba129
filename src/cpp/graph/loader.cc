#include "graph/loader.h"

#include <climits>

#include "graph/body_builder.h"
#include "graph/graph_version.h"
#include "graph/input_ref.h"
#include "util/errors.h"

namespace treadle::graph {

LoadedGraph LoadGraphDef(const void* data, size_t size) {
  proto::GraphDef gd;
  if (size > static_cast<size_t>(INT_MAX) || !gd.ParseFromArray(data, static_cast<int>(size))) {
    throw Error(Code::kDataLoss, "GraphDef: the bytes are not a valid serialized treadle GraphDef");
  }
  if (gd.versions().min_consumer() > kGraphVersion) {
    ThrowInvalidArgument("GraphDef needs a reader of version ", gd.versions().min_consumer(),
                         " or newer (versions.min_consumer), but this treadle reads version ", kGraphVersion);
  }
  LoadedGraph out;
  std::shared_ptr<FunctionLibrary> library = FunctionLibrary::Build(gd.library());
  auto body = std::make_shared<Body>();
  BuildNodes(gd.node(), *library, body.get());
  library->ResolveEffects(body.get());
  out.library = std::move(library);
  out.graph = std::move(body);
  return out;
}

namespace {

// Turns the fed Placeholders into arguments of a copy of the graph.
std::shared_ptr<Body> BindInputs(const Body& graph, const std::vector<std::string>& inputs) {
  auto body = std::make_shared<Body>(graph);
  std::vector<int> arg_of(body->nodes.size(), -1);
  for (const std::string& name : inputs) {
    ParsedInput p = ParseInput(name, "input");
    auto it = body->node_index.find(p.name);
    if (p.control || p.output != 0 || it == body->node_index.end()) {
      ThrowInvalidArgument("input '", name, "' does not name a Placeholder node of the graph");
    }
    Node& node = body->nodes[it->second];
    if (node.op->name != "Placeholder") {
      ThrowInvalidArgument("input '", name, "' names a ", node.op->name, " node; inputs must be Placeholder nodes");
    }
    if (node.fed) ThrowInvalidArgument("input '", name, "' is listed twice");
    node.fed = true;
    arg_of[it->second] = static_cast<int>(body->args.size());
    body->args.push_back({node.name, node.outputs.dtypes[0], node.outputs.shapes[0]});
  }
  for (Node& node : body->nodes) {
    for (TensorRef& r : node.inputs) {
      if (!r.is_arg() && arg_of[r.index] >= 0) r = TensorRef::Arg(arg_of[r.index]);
    }
  }
  return body;
}

}  // namespace

std::shared_ptr<const Executable> MakeGraphExecutable(const LoadedGraph& graph, const std::vector<std::string>& inputs,
                                                      const std::vector<std::string>& outputs) {
  std::shared_ptr<Body> body = BindInputs(*graph.graph, inputs);
  for (const std::string& name : outputs) {
    TensorRef ref = ResolveTensorName(*body, name, "output");
    if (!ref.is_arg() && body->nodes[ref.index].fed) {
      for (size_t a = 0; a < body->args.size(); ++a) {
        if (body->args[a].name == body->nodes[ref.index].name) ref = TensorRef::Arg(static_cast<int>(a));
      }
    }
    body->rets.push_back(ref);
    body->results.push_back({name, body->StaticDType(ref), body->StaticShape(ref)});
  }
  auto library = graph.library;
  // The deleter owns a reference to the library the Executable's nodes call into.
  return std::shared_ptr<const Executable>(new Executable(body, library.get()),
                                           [library](const Executable* e) { delete e; });
}

std::shared_ptr<const Executable> MakeFunctionExecutable(const LoadedGraph& graph, const std::string& name) {
  int f = graph.library->Find(name);
  if (f < 0) throw Error(Code::kNotFound, StrCat("the GraphDef's library has no function '", name, "'"));
  // Shares ownership of the library, which owns the function's Executable.
  return std::shared_ptr<const Executable>(graph.library, &graph.library->Compiled(f));
}

}  // namespace treadle::graph
