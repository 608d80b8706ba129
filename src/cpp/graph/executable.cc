#include "graph/executable.h"

#include <algorithm>

#include "graph/buffer_recycler.h"
#include "graph/elementwise_fusion.h"
#include "graph/library.h"
#include "graph/shape_merge.h"
#include "util/cancel.h"
#include "util/errors.h"

namespace treadle::graph {

namespace {

// The FunctionCaller handed to the kernel of a node that calls library
// functions. It knows only the functions the node's attrs name (resolved to
// library indices at plan time), so a call costs a comparison of one or two
// short names, not a map lookup.
class NodeFunctions final : public FunctionCaller {
 public:
  NodeFunctions(const Node& node, const FunctionLibrary* library) : library_(library) {
    for (const auto& [attr, value] : node.attrs.items()) {
      if (const FuncRef* f = std::get_if<FuncRef>(&value)) functions_.emplace_back(f->name, library->Find(f->name));
    }
  }

  std::shared_ptr<const FunctionLibrary> library() const override { return library_->shared_from_this(); }

  std::vector<Tensor> CallFunction(const std::string& name, const std::vector<Tensor>& args) const override {
    for (const auto& [fname, index] : functions_) {
      if (fname == name) return library_->Compiled(index).Run(args);
    }
    throw Error(Code::kNotFound, StrCat("function '", name, "' is not named by the calling node's attributes"));
  }

 private:
  const FunctionLibrary* library_;
  std::vector<std::pair<std::string, int>> functions_;
};

bool IsAnchor(const OpDef& op) { return op.name == "NoOp"; }

}  // namespace

Executable::Executable(std::shared_ptr<const Body> body, const FunctionLibrary* library)
    : body_(FuseElementwise(std::move(body))), library_(library) {
  Plan();
}

Executable::~Executable() = default;

void Executable::Plan() {
  const Body& body = *body_;
  const int n = static_cast<int>(body.nodes.size());

  // 1. The nodes to run: what the results and control rets need, and every
  // effectful node (prints, Python calls) with what it needs.
  std::vector<char> needed(n, 0);
  std::vector<int> work;
  auto need = [&](int v) {
    if (!needed[v]) {
      needed[v] = 1;
      work.push_back(v);
    }
  };
  for (TensorRef r : body.rets) if (!r.is_arg()) need(r.index);
  for (int v : body.control_rets) need(v);
  for (int v = 0; v < n; ++v) if (body.nodes[v].effectful) need(v);
  while (!work.empty()) {
    int v = work.back();
    work.pop_back();
    for (TensorRef r : body.nodes[v].inputs) if (!r.is_arg()) need(r.index);
    for (int c : body.nodes[v].control_inputs) need(c);
  }

  // 2. Slots: arguments first, then the outputs of each node that runs.
  // Const nodes become constants; fed Placeholders and NoOps do not run.
  num_slots_ = static_cast<int32_t>(body.args.size());
  std::vector<int32_t> node_slot(n, -1), node_const(n, -1);
  std::vector<int> order;
  for (int v : body.topo_order) {
    if (!needed[v]) continue;
    const Node& node = body.nodes[v];
    if (node.op->name == "Placeholder") {
      if (node.fed) continue;
      ThrowInvalidArgument("Placeholder node '", node.name, "' must be fed: a requested output depends on it, ",
                           "but it is not among the inputs");
    }
    if (node.op->name == "Const") {
      node_const[v] = static_cast<int32_t>(consts_.size());
      consts_.push_back(node.attrs.GetTensor("value"));
      continue;
    }
    if (IsAnchor(*node.op)) continue;
    node_slot[v] = num_slots_;
    num_slots_ += static_cast<int32_t>(node.outputs.dtypes.size());
    order.push_back(v);
  }
  auto source_of = [&](TensorRef r) {
    Source s;
    if (r.is_arg()) {
      s.index = r.index;
    } else if (node_const[r.index] >= 0) {
      s.index = node_const[r.index];
      s.is_const = true;
    } else {
      s.index = node_slot[r.index] + r.output;
    }
    return s;
  };

  // 3. Steps, with their input sources and whether they can skip inference:
  // they can when every input and output shape is static and no input is a
  // computed integer tensor (whose value a shape function might check).
  for (int v : order) {
    const Node& node = body.nodes[v];
    Step step;
    step.node = &node;
    step.first_source = static_cast<int32_t>(sources_.size());
    step.num_inputs = static_cast<int32_t>(node.inputs.size());
    step.first_slot = node_slot[v];
    bool is_static = std::all_of(node.outputs.shapes.begin(), node.outputs.shapes.end(),
                                 [](const PartialShape& s) { return s.fully_defined(); });
    for (TensorRef r : node.inputs) {
      Source s = source_of(r);
      sources_.push_back(s);
      if (!body.StaticShape(r).fully_defined()) is_static = false;
      if (!s.is_const && IsInteger(body.StaticDType(r))) is_static = false;
    }
    step.infer_at_run = !is_static;
    std::vector<DType> input_dtypes;
    for (TensorRef r : node.inputs) input_dtypes.push_back(body.StaticDType(r));
    step.kernel = &ChooseKernel(*node.op, input_dtypes, node.outputs.dtypes);
    if (!node.callees.empty()) {
      callers_.push_back(std::make_unique<NodeFunctions>(node, library_));
      step.functions = callers_.back().get();
    }
    max_inputs_ = std::max(max_inputs_, step.num_inputs);
    max_outputs_ = std::max(max_outputs_, static_cast<int32_t>(node.outputs.dtypes.size()));
    steps_.push_back(step);
  }
  for (size_t k = 0; k < body.rets.size(); ++k) {
    result_sources_.push_back(source_of(body.rets[k]));
    check_result_.push_back(IsMoreSpecific(body.results[k].shape, body.StaticShape(body.rets[k])));
  }

  // 4. Last reads. Results are read after every step.
  keep_.assign(num_slots_, 0);
  std::vector<Source*> last(num_slots_, nullptr);
  auto read = [&](Source& s) {
    if (s.is_const) return;
    keep_[s.index] = 1;
    last[s.index] = &s;
  };
  for (Source& s : sources_) read(s);
  for (Source& s : result_sources_) read(s);
  for (Source* s : last) if (s) s->last_use = true;
}

void Executable::CheckArgs(const std::vector<Tensor>& args) const {
  const auto& specs = body_->args;
  if (args.size() != specs.size()) {
    std::string names;
    for (size_t i = 0; i < specs.size(); ++i) names += (i ? ", " : "") + specs[i].name;
    ThrowInvalidArgument(body_->Describe(), " takes ", specs.size(), " argument", specs.size() == 1 ? "" : "s", " (",
                         names, ") but was given ", args.size());
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const Tensor& t = args[i];
    if (!t.defined()) ThrowInvalidArgument(body_->Describe(), " argument '", specs[i].name, "' is an empty tensor");
    if (t.dtype() != specs[i].dtype) {
      ThrowInvalidArgument(body_->Describe(), " argument '", specs[i].name, "' must be ", DTypeName(specs[i].dtype),
                           ", got ", DTypeName(t.dtype()));
    }
    if (!specs[i].shape.IsCompatibleWith(t.shape())) {
      ThrowInvalidArgument(body_->Describe(), " argument '", specs[i].name, "' must have shape ",
                           specs[i].shape.ToString(), ", got shape ", DimsToString(t.shape()));
    }
  }
}

// What one Run keeps between steps: buffers to recycle, and the vectors that
// run-time inference fills (reused, so a step that infers allocates only for
// its inferred outputs).
struct Executable::RunScratch {
  BufferRecycler recycler;
  std::vector<DType> dtypes;
  std::vector<PartialShape> shapes;
  std::vector<const Tensor*> values;
};

void Executable::RunStep(const Step& step, const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs,
                         RunScratch* scratch) const {
  const Node& node = *step.node;
  // The plan knows which outputs something reads (keep_): the kernel may skip work for the others.
  const char* wanted = keep_.data() + step.first_slot;
  try {
    if (!step.infer_at_run) {
      RunKernel(*node.op, inputs, node.attrs, node.outputs, step.functions, outputs, &scratch->recycler, wanted,
                step.kernel);
      return;
    }
    // Shapes (and integer values) known only now: infer with them. Input
    // dtypes need no check, they were verified when the graph was loaded.
    const size_t n = inputs.size();
    scratch->dtypes.resize(n);
    scratch->shapes.resize(n);
    scratch->values.resize(n);
    for (size_t i = 0; i < n; ++i) {
      scratch->dtypes[i] = inputs[i].dtype();
      scratch->shapes[i].known_rank = true;
      scratch->shapes[i].dims.assign(inputs[i].shape().begin(), inputs[i].shape().end());
      scratch->values[i] = &inputs[i];
    }
    InferredOutputs inferred;
    try {
      inferred = InferOutputs(*node.op, scratch->dtypes, scratch->shapes, scratch->values, node.attrs);
    } catch (const StaticError& e) {
      throw Error(Code::kInvalidArgument, StrCat(e.what(), " [Op:", node.op->name, "]"));
    }
    RunKernel(*node.op, inputs, node.attrs, inferred, step.functions, outputs, &scratch->recycler, wanted,
              step.kernel);
  } catch (const Error& e) {
    // Each enclosing node adds a line, so nested calls read like a stack.
    std::string in = body_->function_name.empty() ? "" : " in " + body_->Describe();
    throw Error(e.code(), StrCat(e.what(), "\n\t [[node '", node.name, "' (", node.op->name, ")", in, "]]"));
  }
}

// The planner relies on every slot holding what inference promised (a node
// that skips inference allocates from static shapes), so a kernel that breaks
// the promise is stopped here rather than trusted.
void Executable::CheckOutputs(const Step& step, const std::vector<Tensor>& outputs) const {
  const Node& node = *step.node;
  const auto& dtypes = node.outputs.dtypes;
  const auto& shapes = node.outputs.shapes;
  if (outputs.size() != dtypes.size()) {
    throw Error(Code::kInternal, StrCat("node '", node.name, "' (", node.op->name, ") produced ", outputs.size(),
                                        " outputs where ", dtypes.size(), " were inferred"));
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    const bool dtype_ok = outputs[k].dtype() == dtypes[k];
    if (dtype_ok && shapes[k].IsCompatibleWith(outputs[k].shape())) continue;
    if (dtype_ok && node.shape_set) {
      ThrowInvalidArgument("node '", node.name, "' (", node.op->name, ") produced output ", k, " of shape ",
                           DimsToString(outputs[k].shape()), " but its shape was set to ", shapes[k].ToString(),
                           " (Tensor.set_shape)");
    }
    throw Error(Code::kInternal,
                StrCat("node '", node.name, "' (", node.op->name, ") produced output ", k, " as ",
                       DTypeName(outputs[k].dtype()), " ", DimsToString(outputs[k].shape()), " where ",
                       DTypeName(dtypes[k]), " ", shapes[k].ToString(), " was inferred"));
  }
}

void Executable::CheckResult(size_t k, const Tensor& t) const {
  const TensorSpec& spec = body_->results[k];
  if (!spec.shape.IsCompatibleWith(t.shape())) {
    ThrowInvalidArgument(body_->Describe(), " result '", spec.name, "' has shape ", DimsToString(t.shape()),
                         " but the function declares shape ", spec.shape.ToString());
  }
}

std::vector<Tensor> Executable::Run(const std::vector<Tensor>& args) const {
  CheckArgs(args);
  std::vector<Tensor> slots(num_slots_);
  for (size_t i = 0; i < args.size(); ++i) {
    if (keep_[i]) slots[i] = args[i];
  }
  std::vector<Tensor> inputs, outputs;  // reused by every step
  inputs.reserve(max_inputs_);
  outputs.reserve(max_outputs_);
  RunScratch scratch;
  const cancel::State& cancel_state = cancel::ThisThread();
  for (const Step& step : steps_) {
    // A step may be long (a loop, a call): Ctrl-C and deadlines stop the run between steps.
    cancel::Check(cancel_state);
    const Source* src = sources_.data() + step.first_source;
    for (int32_t k = 0; k < step.num_inputs; ++k, ++src) {
      if (src->is_const) inputs.push_back(consts_[src->index]);
      else if (src->last_use) inputs.push_back(std::move(slots[src->index]));
      else inputs.push_back(slots[src->index]);
    }
    RunStep(step, inputs, &outputs, &scratch);
    CheckOutputs(step, outputs);
    for (size_t k = 0; k < outputs.size(); ++k) {
      const int32_t slot = step.first_slot + static_cast<int32_t>(k);
      if (keep_[slot]) slots[slot] = std::move(outputs[k]);
      else scratch.recycler.Recycle(outputs[k]);  // nobody reads it
    }
    // Inputs read for the last time die here; their buffers serve later outputs.
    for (Tensor& t : inputs) scratch.recycler.Recycle(t);
    inputs.clear();
  }
  std::vector<Tensor> results;
  results.reserve(result_sources_.size());
  for (size_t k = 0; k < result_sources_.size(); ++k) {
    const Source& s = result_sources_[k];
    if (s.is_const) results.push_back(consts_[s.index]);
    else if (s.last_use) results.push_back(std::move(slots[s.index]));
    else results.push_back(slots[s.index]);
    if (check_result_[k]) CheckResult(k, results.back());
  }
  return results;
}

}  // namespace treadle::graph
