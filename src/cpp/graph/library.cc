#include "graph/library.h"

#include <algorithm>

#include "graph/body_builder.h"
#include "graph/call_checks.h"
#include "graph/executable.h"
#include "graph/input_ref.h"
#include "tensor/tensor_proto.h"
#include "util/errors.h"

namespace treadle::graph {

std::vector<TensorSpec> ParseArgSpecs(const google::protobuf::RepeatedPtrField<proto::ArgDef>& args,
                                      const std::string& where) {
  std::vector<TensorSpec> out;
  out.reserve(args.size());
  for (const proto::ArgDef& a : args) {
    std::string arg_where = StrCat(where, " '", a.name(), "'");
    if (!IsValidName(a.name())) {
      ThrowInvalidArgument(where, " '", a.name(), "' has an invalid name (a name is non-empty and has no ':')");
    }
    for (const TensorSpec& s : out) {
      if (s.name == a.name()) ThrowInvalidArgument(where, " '", a.name(), "' appears twice");
    }
    TensorSpec spec;
    spec.name = a.name();
    spec.dtype = DTypeFromProtoEnum(a.type(), arg_where);
    // A missing shape means "unknown"; an empty TensorShapeProto means a scalar.
    spec.shape = a.has_shape() ? PartialShapeFromProto(a.shape(), arg_where) : PartialShape::Unknown();
    out.push_back(std::move(spec));
  }
  return out;
}

FunctionLibrary::~FunctionLibrary() = default;

void FunctionLibrary::AddSignature(FunctionSignature signature) {
  if (!IsValidName(signature.name)) {
    ThrowInvalidArgument("library function ", entries_.size(), " has an invalid name '", signature.name, "'");
  }
  if (!index_.emplace(signature.name, static_cast<int>(entries_.size())).second) {
    ThrowInvalidArgument("the library defines function '", signature.name, "' twice");
  }
  auto entry = std::make_unique<Entry>();
  entry->signature = std::move(signature);
  entries_.push_back(std::move(entry));
}

std::shared_ptr<FunctionLibrary> FunctionLibrary::Build(const proto::FunctionDefLibrary& lib) {
  std::shared_ptr<FunctionLibrary> out(new FunctionLibrary());
  // Signatures first: bodies may call any function of the library.
  for (const proto::FunctionDef& fdef : lib.function()) {
    const proto::OpSignature& sig = fdef.signature();
    FunctionSignature signature;
    signature.name = sig.name();
    signature.is_stateful = sig.is_stateful();
    out->AddSignature(std::move(signature));
    FunctionSignature& added = out->entries_.back()->signature;
    const std::string fn = StrCat("function '", sig.name(), "'");
    added.inputs = ParseArgSpecs(sig.input_arg(), fn + " input");
    added.outputs = ParseArgSpecs(sig.output_arg(), fn + " output");
  }
  for (int i = 0; i < lib.function_size(); ++i) {
    out->entries_[i]->body = BuildFunctionBody(lib.function(i), *out);
  }
  out->CheckCallGraph();
  return out;
}

std::shared_ptr<FunctionLibrary> FunctionLibrary::Build(
    const std::vector<std::shared_ptr<const LibraryFunction>>& functions) {
  std::shared_ptr<FunctionLibrary> out(new FunctionLibrary());
  for (const auto& f : functions) out->AddSignature(f->signature);
  for (size_t i = 0; i < functions.size(); ++i) {
    // Each library gets its own copy: callees are indices into this library,
    // and effects depend on which functions it holds.
    auto body = std::make_shared<Body>(*functions[i]->body);
    for (Node& node : body->nodes) {
      node.callees.clear();
      const auto& items = node.attrs.items();
      if (std::none_of(items.begin(), items.end(), [](const auto& kv) { return NamesFunctions(kv.second); })) continue;
      std::vector<PartialShape> shapes;
      shapes.reserve(node.inputs.size());
      for (TensorRef r : node.inputs) shapes.push_back(body->StaticShape(r));
      CheckFunctionCalls(*body, &node, shapes, *out);
    }
    out->entries_[i]->body = std::move(body);
  }
  out->CheckCallGraph();
  return out;
}

std::shared_ptr<const LibraryFunction> FunctionLibrary::Function(int i) const {
  auto f = std::make_shared<LibraryFunction>();
  f->signature = entries_[i]->signature;
  f->body = entries_[i]->body;
  return f;
}

int FunctionLibrary::Find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? -1 : it->second;
}

// Depth-first over calls: rejects recursion and over-deep nesting, and
// computes each function's effects and call height once its callees are done.
void FunctionLibrary::Visit(int i, std::vector<int>* path, std::vector<int>* state) {
  (*state)[i] = 1;
  path->push_back(i);
  if (static_cast<int>(path->size()) > kMaxCallDepth) {
    ThrowInvalidArgument("function calls nest more than ", kMaxCallDepth, " deep (", entries_[path->front()]->signature.name,
                         " -> ... -> ", entries_[i]->signature.name, ")");
  }
  Entry& e = *entries_[i];
  for (const Node& node : e.body->nodes) {
    for (int callee : node.callees) {
      if ((*state)[callee] == 1) {
        std::string chain;
        bool on = false;
        for (int f : *path) {
          if (f == callee) on = true;
          if (on) chain += "'" + entries_[f]->signature.name + "' -> ";
        }
        chain += "'" + entries_[callee]->signature.name + "'";
        ThrowInvalidArgument("function '", entries_[callee]->signature.name,
                             "' calls itself (", chain, "); recursive functions are not supported");
      }
      if ((*state)[callee] == 0) Visit(callee, path, state);
    }
  }
  ResolveEffects(e.body.get());
  e.effectful = e.signature.is_stateful ||
                std::any_of(e.body->nodes.begin(), e.body->nodes.end(), [](const Node& n) { return n.effectful; });
  for (const Node& node : e.body->nodes) {
    for (int callee : node.callees) e.height = std::max(e.height, entries_[callee]->height);
  }
  e.height += 1;
  path->pop_back();
  (*state)[i] = 2;
}

void FunctionLibrary::CheckCallGraph() {
  std::vector<int> state(entries_.size(), 0);
  std::vector<int> path;
  for (int i = 0; i < size(); ++i) {
    if (state[i] == 0) Visit(i, &path, &state);
  }
}

void FunctionLibrary::ResolveEffects(Body* body) const {
  for (Node& node : body->nodes) {
    if (node.callees.empty()) {
      node.effectful = node.op->stateful;
      continue;
    }
    // A node that calls functions has their effects, not its op's flag.
    node.effectful = false;
    for (int callee : node.callees) {
      node.effectful = node.effectful || entries_[callee]->effectful;
      if (entries_[callee]->height >= kMaxCallDepth) {
        ThrowInvalidArgument(NodeWhere(*body, node), ": function calls nest more than ", kMaxCallDepth, " deep");
      }
    }
  }
}

const Executable& FunctionLibrary::Compiled(int i) const {
  const Entry& e = *entries_[i];
  std::call_once(e.planned, [&] { e.executable = std::make_unique<Executable>(e.body, this); });
  return *e.executable;
}

}  // namespace treadle::graph
