// The Loom as ops, so a loom runs eagerly and as a node of a graph alike:
// LoomRun runs a schedule (all depths, in a C++ loop) and returns one output
// batch per type shape plus a record of the run; LoomRunGrad runs the
// backward pass from that record.
#include <algorithm>
#include <climits>
#include <cstring>
#include <iterator>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "graph/graph_def_writer.h"
#include "loom/loom_attrs.h"
#include "loom/loom_registry.h"
#include "ops/op_helpers.h"
#include "util/errors.h"

namespace treadle::loom {

namespace {

// The runtimes of the looms in use, most recently used first. Bounded: a
// process that builds loom after loom keeps only the latest kMaxRuntimes (a
// graph whose runtime was evicted rebuilds it on its next run). An entry is
// found by the library it runs and the loom's attrs (compared in full; the
// hash only narrows the search), so a run rebuilds no metadata. The entry's
// runtime holds the library alive, so its address is not reused while cached.
class RuntimeCache {
 public:
  std::shared_ptr<const LoomRuntime> Find(uint64_t hash, const graph::FunctionLibrary* library,
                                          const AttrMap& attrs) {
    std::lock_guard<std::mutex> lock(mu_);
    return FindLocked(hash, library, attrs);
  }

  std::shared_ptr<const LoomRuntime> Insert(uint64_t hash, const graph::FunctionLibrary* library,
                                            const AttrMap& attrs, std::shared_ptr<const LoomRuntime> rt) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto built = FindLocked(hash, library, attrs)) return built;  // another thread built it first
    entries_.push_front(Entry{hash, library, LoomAttrsOf(attrs), std::move(rt)});
    index_.emplace(hash, entries_.begin());
    if (entries_.size() > kMaxRuntimes) {
      auto [first, last] = index_.equal_range(entries_.back().hash);
      for (auto it = first; it != last; ++it) {
        if (it->second == std::prev(entries_.end())) {
          index_.erase(it);
          break;
        }
      }
      entries_.pop_back();
    }
    return entries_.front().runtime;
  }

 private:
  std::shared_ptr<const LoomRuntime> FindLocked(uint64_t hash, const graph::FunctionLibrary* library,
                                                const AttrMap& attrs) {
    auto [first, last] = index_.equal_range(hash);
    for (auto it = first; it != last; ++it) {
      const Entry& e = *it->second;
      if (e.library == library && SameLoomAttrs(e.attrs, attrs)) {
        entries_.splice(entries_.begin(), entries_, it->second);  // now the most recent
        return e.runtime;
      }
    }
    return nullptr;
  }

  static constexpr size_t kMaxRuntimes = 64;
  struct Entry {
    uint64_t hash;
    const graph::FunctionLibrary* library;
    AttrMap attrs;  // the loom attrs only
    std::shared_ptr<const LoomRuntime> runtime;
  };
  std::mutex mu_;
  std::list<Entry> entries_;
  std::unordered_multimap<uint64_t, std::list<Entry>::iterator> index_;
};

// The libraries Looms registered for eager runs, by the loom they serve (its
// attrs: function names and body fingerprints included, as two files may
// hold functions of one name that compute different things). Every Loom that
// registers a library keeps it: an entry holds all of them, weakly, and a run
// uses any that is still alive. (Equal attrs mean equal function bodies, so
// they are interchangeable.) Dropping one copy of a loom, e.g. a second load
// of the same file, thus never takes the functions from another copy.
class EagerLibraries {
 public:
  void Register(AttrMap attrs, const std::shared_ptr<const graph::FunctionLibrary>& library) {
    std::lock_guard<std::mutex> lock(mu_);
    // Forget libraries nobody holds any more, so the map does not grow without bound.
    for (auto it = by_loom_.begin(); it != by_loom_.end();) {
      it = it->second.Prune() ? by_loom_.erase(it) : std::next(it);
    }
    const uint64_t hash = HashLoomAttrs(attrs);
    auto [first, last] = by_loom_.equal_range(hash);
    for (auto it = first; it != last; ++it) {
      if (SameLoomAttrs(it->second.attrs, attrs)) {
        it->second.Add(library);
        return;
      }
    }
    by_loom_.emplace(hash, Entry{std::move(attrs), {library}});
  }

  std::shared_ptr<const graph::FunctionLibrary> Find(uint64_t hash, const AttrMap& attrs) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [first, last] = by_loom_.equal_range(hash);
    for (auto it = first; it != last; ++it) {
      if (SameLoomAttrs(it->second.attrs, attrs)) return it->second.Alive();
    }
    return nullptr;
  }

 private:
  struct Entry {
    AttrMap attrs;
    std::vector<std::weak_ptr<const graph::FunctionLibrary>> libraries;

    void Add(const std::shared_ptr<const graph::FunctionLibrary>& library) {
      for (const auto& held : libraries) {
        if (held.lock() == library) return;
      }
      libraries.push_back(library);
    }
    // Drops the expired libraries; true when none is left.
    bool Prune() {
      libraries.erase(std::remove_if(libraries.begin(), libraries.end(),
                                     [](const auto& held) { return held.expired(); }),
                      libraries.end());
      return libraries.empty();
    }
    std::shared_ptr<const graph::FunctionLibrary> Alive() const {
      for (const auto& held : libraries) {
        if (auto library = held.lock()) return library;
      }
      return nullptr;
    }
  };
  std::mutex mu_;
  std::unordered_multimap<uint64_t, Entry> by_loom_;
};

EagerLibraries& Eager() {
  static auto* libraries = new EagerLibraries();
  return *libraries;
}

// The library whose functions a loom op runs (see RuntimeForAttrs).
std::shared_ptr<const graph::FunctionLibrary> LibraryFor(uint64_t hash, const AttrMap& attrs,
                                                         const FunctionCaller* functions) {
  if (functions) return functions->library();
  auto library = Eager().Find(hash, attrs);
  if (!library) {
    throw Error(Code::kNotFound, "no td.loom.Loom of this process holds the functions this eager loom op's attrs "
                                 "name (an eager loom op finds them through the Loom that made them, which "
                                 "must still exist; in a graph, the graph's library must hold them)");
  }
  return library;
}

// The functions the loom names and every function they call, written as
// FunctionDefs: what the loom's body fingerprints are computed over.
proto::FunctionDefLibrary WriteReachable(const graph::FunctionLibrary& library, const proto::LoomMetadata& m) {
  std::vector<int> queue;
  std::vector<char> seen(library.size(), 0);
  auto visit = [&](int f) {
    if (f >= 0 && !seen[f]) {
      seen[f] = 1;
      queue.push_back(f);
    }
  };
  for (const auto& op : m.ops()) visit(library.Find(op.function_name()));  // missing: CheckFunctions says so
  proto::FunctionDefLibrary out;
  for (size_t q = 0; q < queue.size(); ++q) {
    graph::WriteFunctionDef(*library.Function(queue[q]), out.add_function());
    for (const graph::Node& node : library.body(queue[q]).nodes) {
      for (int callee : node.callees) visit(callee);
    }
  }
  return out;
}

}  // namespace

std::shared_ptr<const LoomRuntime> BuildRuntime(const proto::LoomMetadata& metadata,
                                                std::shared_ptr<const graph::FunctionLibrary> library) {
  const proto::FunctionDefLibrary written = WriteReachable(*library, metadata);
  return LoomRuntime::FromLibrary(metadata, std::move(library), written);
}

void RegisterEagerLibrary(const proto::LoomMetadata& metadata,
                          const std::shared_ptr<const graph::FunctionLibrary>& library) {
  AttrMap attrs;  // the attrs the loom's ops carry, in their OpDefs' order
  MetadataToAttrs(metadata, &attrs);
  Eager().Register(LoomAttrsOf(attrs), library);
}

std::shared_ptr<const LoomRuntime> RuntimeForAttrs(const AttrMap& attrs, const FunctionCaller* functions) {
  static auto* cache = new RuntimeCache();
  const uint64_t hash = HashLoomAttrs(attrs);
  std::shared_ptr<const graph::FunctionLibrary> library = LibraryFor(hash, attrs, functions);
  if (auto rt = cache->Find(hash, library.get(), attrs)) return rt;
  const graph::FunctionLibrary* identity = library.get();
  return cache->Insert(hash, identity, attrs, BuildRuntime(MetadataFromAttrs(attrs), std::move(library)));
}

std::shared_ptr<const Schedule> MergeMessages(const std::shared_ptr<const LoomSpec>& spec,
                                              const std::string* messages, size_t count) {
  if (count == 1) return Finalize(spec, ParseWeaverMessage(*spec, messages[0].data(), messages[0].size()));
  Weaver merged(spec);
  for (size_t i = 0; i < count; ++i) {
    try {
      merged.Append(ParseWeaverMessage(*spec, messages[i].data(), messages[i].size()), /*rebuild_memos=*/false);
    } catch (const Error& e) {
      if (count == 1) throw;
      throw Error(e.code(), StrCat("schedule ", i, ": ", e.what()));
    }
  }
  return Finalize(spec, merged.state());
}

std::shared_ptr<const Schedule> ScheduleFromTensor(const std::shared_ptr<const LoomSpec>& spec, const Tensor& t) {
  if (t.dtype() == DType::kVariant) {
    auto s = GetHandle<Schedule>(t, DType::kVariant, "Loom schedule");
    if (s->spec->fingerprint != spec->fingerprint) {
      ThrowInvalidArgument("the schedule was made by a weaver of another loom");
    }
    return s;
  }
  if (t.dtype() != DType::kString || t.rank() > 1) {
    ThrowInvalidArgument("a loom schedule must be a string scalar (a serialized WeaverMessage) or a 1-D string "
                         "tensor of them, got ", t.DebugString());
  }
  return MergeMessages(spec, t.data<std::string>(), static_cast<size_t>(t.num_elements()));
}

namespace {

const std::vector<DType> kScheduleTypes = {DType::kString, DType::kVariant};

LoomInputs SplitInputs(const LoomRuntime& rt, const KernelContext& ctx) {
  const LoomSpec& sp = *rt.spec();
  const size_t named = sp.named_tensor_names.size(), batch = sp.batch_input_type_shapes.size();
  const size_t total = named + batch + rt.num_captures();
  if (ctx.inputs.size() != total + 1) {
    ThrowInvalidArgument(ctx.op.name, ": the loom takes ", total, " inputs besides the schedule, got ",
                         ctx.inputs.size() - 1);
  }
  LoomInputs in;
  auto it = ctx.inputs.begin() + 1;
  in.named.assign(it, it + named);
  in.batch.assign(it + named, it + named + batch);
  in.captures.assign(it + named + batch, ctx.inputs.end());
  return in;
}

void LoomRunKernel(KernelContext& ctx) {
  auto rt = RuntimeForAttrs(ctx.attrs, ctx.functions);
  auto schedule = ScheduleFromTensor(rt->spec(), ctx.input(0));
  LoomInputs in = SplitInputs(*rt, ctx);
  auto record = std::make_shared<ForwardRecord>();
  record->runtime = rt;  // names the loom to LoomRunGrad even when the run saved nothing
  // Inference (nothing will read the record) runs each op's forward function
  // and saves nothing for a backward pass.
  const bool training = ctx.output_wanted(static_cast<int>(ctx.out_dtypes.size()) - 1);
  std::vector<Tensor> outs = RunForward(rt, schedule, in, training ? record.get() : nullptr);
  for (size_t t = 0; t < outs.size(); ++t) ctx.set_output(static_cast<int>(t), std::move(outs[t]));
  ctx.set_output(static_cast<int>(outs.size()), MakeHandleTensor(DType::kVariant, record));
}

OpDef LoomRunOp() {
  OpDef op;
  op.name = "LoomRun";
  op.inputs = {{"schedule", false, "", kScheduleTypes}, {"inputs", true, "", {}}};
  op.outputs = {"outputs", "record"};
  op.attrs = {{"Tinputs", AttrType::kTypeList, std::nullopt},
              {"output_types", AttrType::kTypeList, std::nullopt},
              {"output_shapes", AttrType::kShapeList, std::nullopt}};
  for (AttrDef& a : LoomAttrDefs()) op.attrs.push_back(std::move(a));
  op.dtype_fn = [](const InferContext& c) {
    CheckInputTypesMatchAttr(c, "Tinputs", 1);
    std::vector<DType> out = c.attrs.GetTypeList("output_types");
    out.push_back(DType::kVariant);
    return out;
  };
  op.shape_fn = [](const InferContext& c) {
    if (c.shapes[0].known_rank && c.shapes[0].rank() > 1) {
      ThrowValueError("LoomRun: the schedule must be a scalar or a vector of messages, got shape ",
                      c.shapes[0].ToString());
    }
    std::vector<PartialShape> out = c.attrs.GetShapeList("output_shapes");
    if (out.size() != c.attrs.GetTypeList("output_types").size()) {
      ThrowValueError("LoomRun: output_shapes and output_types differ in length");
    }
    out.push_back(PartialShape(Dims{}));
    return out;
  };
  op.kernel = LoomRunKernel;
  op.stateful = true;  // op functions may hold effects (random ops); never fold or merge a run
  op.long_running = true;
  op.gradient_only_outputs = 1;  // the record
  op.doc = "Runs a Loom schedule: every depth's ops on their batched arguments; one output batch per type shape.";
  return op;
}

void LoomRunGradKernel(KernelContext& ctx) {
  auto record = GetHandle<ForwardRecord>(ctx.input(0), DType::kVariant, "LoomRunGrad");
  const LoomSpec& sp = *record->runtime->spec();
  if (static_cast<int64_t>(sp.named_tensor_names.size()) != ctx.attrs.GetInt("num_named_tensors") ||
      static_cast<int64_t>(sp.batch_input_type_shapes.size()) != ctx.attrs.GetInt("num_batch_inputs")) {
    ThrowInvalidArgument("LoomRunGrad: the record is of a loom with ", sp.named_tensor_names.size(),
                         " named tensors and ", sp.batch_input_type_shapes.size(), " batch inputs, but the attrs say ",
                         ctx.attrs.GetInt("num_named_tensors"), " and ", ctx.attrs.GetInt("num_batch_inputs"));
  }
  std::vector<Tensor> grads(ctx.inputs.begin() + 1, ctx.inputs.end());
  std::vector<Tensor> out = RunBackward(*record, grads);
  if (out.size() != ctx.out_dtypes.size()) {
    ThrowInvalidArgument("LoomRunGrad: the record is of a loom with ", out.size(), " gradient outputs, but Tinputs ",
                         "makes ", ctx.out_dtypes.size());
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].dtype() != ctx.out_dtypes[i]) {
      ThrowInvalidArgument("LoomRunGrad: gradient output ", i, " is ", DTypeName(out[i].dtype()),
                           " but Tinputs says ", DTypeName(ctx.out_dtypes[i]));
    }
    ctx.set_output(static_cast<int>(i), std::move(out[i]));
  }
}

// The first input after the named tensors and the first after the batch inputs, checked against Tinputs.
std::pair<size_t, size_t> BatchInputRange(const InferContext& c) {
  const int64_t named = c.attrs.GetInt("num_named_tensors"), batch = c.attrs.GetInt("num_batch_inputs");
  const size_t n = c.attrs.GetTypeList("Tinputs").size();
  if (named < 0 || batch < 0 || static_cast<size_t>(named + batch) > n) {
    ThrowValueError("LoomRunGrad: num_named_tensors (", named, ") and num_batch_inputs (", batch,
                    ") must be >= 0 and add up to at most the ", n, " inputs in Tinputs");
  }
  return {static_cast<size_t>(named), static_cast<size_t>(named + batch)};
}

OpDef LoomRunGradOp() {
  OpDef op;
  op.name = "LoomRunGrad";
  op.inputs = {{"record", false, "", {DType::kVariant}}, {"output_grads", true, "", {}}};
  // One gradient per loom input, except that a batch input's is an
  // IndexedSlices: two outputs, values (rows) and int64 indices.
  op.outputs = {"input_grads"};
  op.attrs = {{"Tgrads", AttrType::kTypeList, std::nullopt},
              {"Tinputs", AttrType::kTypeList, std::nullopt},
              {"input_shapes", AttrType::kShapeList, std::nullopt},
              {"num_named_tensors", AttrType::kInt, std::nullopt},
              {"num_batch_inputs", AttrType::kInt, std::nullopt}};
  op.dtype_fn = [](const InferContext& c) {
    CheckInputTypesMatchAttr(c, "Tgrads", 1);
    const auto [first, last] = BatchInputRange(c);
    std::vector<DType> out;
    const std::vector<DType>& types = c.attrs.GetTypeList("Tinputs");
    for (size_t i = 0; i < types.size(); ++i) {
      out.push_back(types[i]);
      if (i >= first && i < last) out.push_back(DType::kInt64);
    }
    return out;
  };
  op.shape_fn = [](const InferContext& c) {
    std::vector<PartialShape> shapes = c.attrs.GetShapeList("input_shapes");
    if (shapes.size() != c.attrs.GetTypeList("Tinputs").size()) {
      ThrowValueError("LoomRunGrad: input_shapes and Tinputs differ in length");
    }
    const auto [first, last] = BatchInputRange(c);
    std::vector<PartialShape> out;
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (i < first || i >= last) {
        out.push_back(shapes[i]);
        continue;
      }
      PartialShape rows = shapes[i];
      if (rows.known_rank && rows.rank() > 0) rows.dims[0] = kUnknownDim;
      out.push_back(rows);
      out.push_back(PartialShape(Dims{kUnknownDim}));
    }
    return out;
  };
  op.kernel = LoomRunGradKernel;
  op.long_running = true;
  op.doc = "The backward pass of LoomRun: gradients of its inputs from the gradients of its outputs (a batch "
           "input's as the values and indices of IndexedSlices).";
  return op;
}

// ---- The unrolled mode's steps. Each takes the schedule (a variant made by
// LoomInitialState) and a list of tensors, and declares its outputs by attrs.

std::vector<Tensor> ListInput(const KernelContext& ctx) { return {ctx.inputs.begin() + 1, ctx.inputs.end()}; }

std::shared_ptr<const Schedule> ScheduleInput(const KernelContext& ctx, const LoomRuntime& rt) {
  return ScheduleFromTensor(rt.spec(), ctx.input(0));
}

void SetOutputs(KernelContext& ctx, std::vector<Tensor> outs, size_t first = 0) {
  if (outs.size() + first != ctx.out_dtypes.size()) {
    ThrowInvalidArgument(ctx.op.name, ": produced ", outs.size() + first, " outputs, but Tout lists ",
                         ctx.out_dtypes.size());
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].dtype() != ctx.out_dtypes[first + i]) {
      ThrowInvalidArgument(ctx.op.name, ": output ", first + i, " is ", DTypeName(outs[i].dtype()), " but Tout says ",
                           DTypeName(ctx.out_dtypes[first + i]));
    }
    ctx.set_output(static_cast<int>(first + i), std::move(outs[i]));
  }
}

// [first, first + n) of `v`, checked to exist.
std::vector<Tensor> Slice(const std::vector<Tensor>& v, size_t first, size_t n, const char* op) {
  if (first + n > v.size()) ThrowInvalidArgument(op, ": expected at least ", first + n, " inputs, got ", v.size());
  return {v.begin() + first, v.begin() + first + n};
}

// An int attr naming a depth, checked here once so the runtime can index its
// per-depth tables with it: a layer's `depth` is at least 1 (depth 0 is the
// initial state, which no layer computes), `num_depths` at least 0.
int32_t DepthAttr(const KernelContext& ctx, const char* name, int64_t least) {
  const int64_t d = ctx.attrs.GetInt(name);
  if (d < least || d > kMaxDepth) {
    ThrowInvalidArgument(ctx.op.name, ": attr ", name, " = ", d, " is out of range [", least, ", ", kMaxDepth, "]");
  }
  return static_cast<int32_t>(d);
}

void InitialStateKernel(KernelContext& ctx) {
  auto rt = RuntimeForAttrs(ctx.attrs, ctx.functions);
  auto sc = ScheduleInput(ctx, *rt);
  LoomInputs in = SplitInputs(*rt, ctx);
  ctx.set_output(0, MakeHandleTensor(DType::kVariant, std::const_pointer_cast<Schedule>(sc)));
  SetOutputs(ctx, InitialStates(*rt, *sc, in), 1);
}

void LayerKernel(KernelContext& ctx) {
  auto rt = RuntimeForAttrs(ctx.attrs, ctx.functions);
  auto sc = ScheduleInput(ctx, *rt);
  const size_t T = rt->spec()->num_type_shapes();
  std::vector<Tensor> list = ListInput(ctx);
  SetOutputs(ctx, RunLayer(*rt, *sc, DepthAttr(ctx, "depth", 1), Slice(list, 0, T, "LoomLayer"),
                           Slice(list, T, list.size() - std::min(T, list.size()), "LoomLayer")));
}

void GatherOutputsKernel(KernelContext& ctx) {
  auto rt = RuntimeForAttrs(ctx.attrs, ctx.functions);
  auto sc = ScheduleInput(ctx, *rt);
  SetOutputs(ctx, GatherOutputs(*rt->spec(), *sc, DepthAttr(ctx, "num_depths", 0), ListInput(ctx)));
}

void InitialStateGradKernel(KernelContext& ctx) {
  auto rt = RuntimeForAttrs(ctx.attrs, ctx.functions);
  auto sc = ScheduleInput(ctx, *rt);
  const LoomSpec& sp = *rt->spec();
  const size_t T = sp.num_type_shapes();
  std::vector<Tensor> list = ListInput(ctx);
  const size_t named = sp.named_tensor_names.size(), batch = sp.batch_input_type_shapes.size();
  LoomInputs in;
  in.named = Slice(list, T, named, "LoomInitialStateGrad");
  in.batch = Slice(list, T + named, batch, "LoomInitialStateGrad");
  std::vector<Tensor> grads = InitialStatesGrad(*rt, *sc, in, Slice(list, 0, T, "LoomInitialStateGrad"));
  for (const Tensor& c : Slice(list, T + named + batch, rt->num_captures(), "LoomInitialStateGrad")) {
    grads.push_back(Tensor(c.dtype(), c.shape()));  // captures are only passed through: no gradient
    if (grads.back().nbytes()) std::memset(grads.back().raw_data(), 0, grads.back().nbytes());
  }
  SetOutputs(ctx, std::move(grads));
}

void LayerGradKernel(KernelContext& ctx) {
  auto rt = RuntimeForAttrs(ctx.attrs, ctx.functions);
  auto sc = ScheduleInput(ctx, *rt);
  const size_t T = rt->spec()->num_type_shapes(), C = rt->num_captures();
  std::vector<Tensor> list = ListInput(ctx);
  if (list.size() != 2 * T + C) {
    ThrowInvalidArgument("LoomLayerGrad: expected ", 2 * T + C, " inputs besides the schedule, got ", list.size());
  }
  SetOutputs(ctx, RunLayerGrad(*rt, *sc, DepthAttr(ctx, "depth", 1), Slice(list, 0, T, "LoomLayerGrad"),
                               Slice(list, T, C, "LoomLayerGrad"), Slice(list, T + C, T, "LoomLayerGrad")));
}

void GatherOutputsGradKernel(KernelContext& ctx) {
  auto rt = RuntimeForAttrs(ctx.attrs, ctx.functions);
  auto sc = ScheduleInput(ctx, *rt);
  SetOutputs(ctx, GatherOutputsGrad(*rt->spec(), *sc, DepthAttr(ctx, "num_depths", 0), ListInput(ctx)));
}

OpDef UnrolledOp(const char* name, KernelFn kernel, const char* int_attr, bool takes_message, const char* doc) {
  OpDef op;
  op.name = name;
  op.inputs = {{"schedule", false, "", takes_message ? kScheduleTypes : std::vector<DType>{DType::kVariant}},
               {"inputs", true, "", {}}};
  op.outputs = {"outputs"};
  op.attrs = {{"Tinputs", AttrType::kTypeList, std::nullopt},
              {"Tout", AttrType::kTypeList, std::nullopt},
              {"output_shapes", AttrType::kShapeList, std::nullopt}};
  for (AttrDef& a : LoomAttrDefs()) op.attrs.push_back(std::move(a));
  if (int_attr) op.attrs.push_back({int_attr, AttrType::kInt, std::nullopt});
  op.dtype_fn = [](const InferContext& c) {
    CheckInputTypesMatchAttr(c, "Tinputs", 1);
    return c.attrs.GetTypeList("Tout");
  };
  op.shape_fn = [](const InferContext& c) {
    std::vector<PartialShape> out = c.attrs.GetShapeList("output_shapes");
    if (out.size() != c.attrs.GetTypeList("Tout").size()) {
      ThrowValueError(c.op.name, ": output_shapes and Tout differ in length");
    }
    return out;
  };
  op.kernel = std::move(kernel);
  op.stateful = true;
  op.long_running = true;
  op.doc = doc;
  return op;
}

OpRegistrar loom_run(LoomRunOp());
OpRegistrar loom_run_grad(LoomRunGradOp());
OpRegistrar loom_initial_state(UnrolledOp("LoomInitialState", InitialStateKernel, nullptr, true,
                                          "Unrolled loom: the finalised schedule and the state at depth 0."));
OpRegistrar loom_layer(UnrolledOp("LoomLayer", LayerKernel, "depth", false,
                                  "Unrolled loom: the state at `depth` from the state below and the captures."));
OpRegistrar loom_gather_outputs(UnrolledOp("LoomGatherOutputs", GatherOutputsKernel, "num_depths", false,
                                           "Unrolled loom: the outputs per type shape from every depth's state."));
OpRegistrar loom_initial_state_grad(UnrolledOp("LoomInitialStateGrad", InitialStateGradKernel, nullptr, false,
                                               "Gradient of LoomInitialState: of the named tensors and batch inputs."));
OpRegistrar loom_layer_grad(UnrolledOp("LoomLayerGrad", LayerGradKernel, "depth", false,
                                       "Gradient of LoomLayer: of the state below and the captures."));
OpRegistrar loom_gather_outputs_grad(UnrolledOp("LoomGatherOutputsGrad", GatherOutputsGradKernel, "num_depths",
                                                false, "Gradient of LoomGatherOutputs: of every depth's state."));

}  // namespace
}  // namespace treadle::loom
