#include "loom/weaver.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "tensor/tensor_proto.h"
#include "util/errors.h"

namespace treadle::loom {

Weaver::Weaver(std::shared_ptr<const LoomSpec> spec) : spec_(std::move(spec)) {
  const int T = spec_->num_type_shapes();
  s_.constants.resize(T);
  s_.num_constants.assign(T, 0);
  named_result_.assign(spec_->named_tensor_names.size(), -1);
}

int32_t Weaver::NewResult(int32_t depth, int32_t ts, int32_t op, int32_t output, int64_t position) {
  if (s_.num_results() >= kMaxResults) {
    ThrowValueError("Weaver: a schedule holds at most ", kMaxResults, " results");
  }
  s_.depth.push_back(depth);
  s_.type_shape.push_back(ts);
  s_.op.push_back(op);
  s_.output.push_back(output);
  s_.position.push_back(position);
  lifted_.push_back(-1);
  return static_cast<int32_t>(s_.depth.size() - 1);
}

void Weaver::CheckResult(int32_t result, const char* what) const {
  if (result < 0 || result >= s_.num_results()) {
    ThrowValueError("Weaver: ", what, " ", result, " is not a result of this weaver (it has ", s_.num_results(),
                    " results)");
  }
}

void Weaver::EnsureDepth(int32_t depth) {
  if (depth <= s_.deepest) return;
  if (spec_->max_depth > 0 && depth > spec_->max_depth) {
    ThrowValueError("Weaver: the call would be at depth ", depth, ", beyond the loom's max_depth of ",
                    spec_->max_depth);
  }
  if (depth > kMaxDepth) ThrowValueError("Weaver: depth ", depth, " exceeds the limit of ", kMaxDepth);
  s_.deepest = depth;
  s_.calls.resize(static_cast<size_t>(depth) * spec_->num_ops(), 0);
  s_.wiring.resize(static_cast<size_t>(depth) * spec_->num_arg_slots);
  s_.row_lengths.resize(static_cast<size_t>(depth) * spec_->num_arg_slots);
}

int32_t Weaver::NamedTensor(int index) {
  if (index < 0 || index >= static_cast<int>(named_result_.size())) {
    ThrowValueError("Weaver: named tensor index ", index, " is out of range");
  }
  if (named_result_[index] < 0) {
    named_result_[index] = NewResult(0, spec_->named_tensor_type_shapes[index], kNamedTensorSource, 0, index);
    ++version_;
  }
  return named_result_[index];
}

int32_t Weaver::BatchInput(int type_shape, int64_t row) {
  if (type_shape < 0 || type_shape >= spec_->num_type_shapes()) {
    ThrowValueError("Weaver.batch_input: type shape index ", type_shape, " is out of range");
  }
  if (spec_->batch_input_slot[type_shape] < 0) {
    ThrowValueError("Weaver.batch_input: the loom has no batch input of ", spec_->type_shapes[type_shape].ToString());
  }
  if (row < 0 || row > INT32_MAX) ThrowValueError("Weaver.batch_input: batch index ", row, " is out of range");
  ++version_;
  return NewResult(0, type_shape, kBatchInputSource, 0, row);
}

int32_t Weaver::Constants(int type_shape, const void* data, int64_t count) {
  if (type_shape < 0 || type_shape >= spec_->num_type_shapes()) {
    ThrowValueError("Weaver.constant: type shape index ", type_shape, " is out of range");
  }
  if (count < 1 || s_.num_results() + count > kMaxResults) {
    ThrowValueError("Weaver.constant: cannot add ", count, " constants");
  }
  const TypeShape& ts = spec_->type_shapes[type_shape];
  std::vector<char>& bytes = s_.constants[type_shape];
  const auto* p = static_cast<const char*>(data);
  bytes.insert(bytes.end(), p, p + ts.row_bytes * count);
  const int64_t first_index = s_.num_constants[type_shape];
  s_.num_constants[type_shape] += count;
  int32_t first = -1;
  for (int64_t i = 0; i < count; ++i) {
    int32_t r = NewResult(0, type_shape, kConstantSource, 0, first_index + i);
    if (i == 0) first = r;
  }
  ++version_;
  return first;
}

int32_t Weaver::Constant(int type_shape, const void* data, size_t nbytes) {
  if (type_shape >= 0 && type_shape < spec_->num_type_shapes() &&
      nbytes != spec_->type_shapes[type_shape].row_bytes) {
    ThrowValueError("Weaver.constant: the value has ", nbytes, " bytes but ",
                    spec_->type_shapes[type_shape].ToString(), " needs ", spec_->type_shapes[type_shape].row_bytes);
  }
  return Constants(type_shape, data, 1);
}

int32_t Weaver::Lift(int32_t result, int32_t depth) {
  while (s_.depth[result] < depth) {
    if (lifted_[result] >= 0) {
      result = lifted_[result];
      continue;
    }
    const int32_t d = s_.depth[result] + 1;
    const int32_t ts = s_.type_shape[result];  // the pass-through op of ts is op ts
    const int64_t call = s_.calls[static_cast<size_t>(d - 1) * spec_->num_ops() + ts]++;
    s_.wiring[static_cast<size_t>(d - 1) * spec_->num_arg_slots + spec_->arg_offset[ts]].push_back(result);
    const int32_t up = NewResult(d, ts, ts, 0, call);
    lifted_[result] = up;
    result = up;
  }
  return result;
}

int32_t Weaver::CheckArgument(int op, int a, int32_t r) const {
  const OpSpec& o = spec_->ops[op];
  if (r < 0 || r >= s_.num_results()) {
    ThrowValueError(spec_->DescribeOp(op), " argument ", a, ": ", r, " is not a result of this weaver (it has ",
                    s_.num_results(), " results)");
  }
  if (s_.type_shape[r] != o.inputs[a]) {
    ThrowTypeError(spec_->DescribeOp(op), " argument ", a, " must be ", o.ragged[a] ? "results of " : "",
                   spec_->type_shapes[o.inputs[a]].ToString(), ", got a result of ",
                   spec_->type_shapes[s_.type_shape[r]].ToString());
  }
  return s_.depth[r] + 1;
}

int32_t Weaver::Call(int op, const int32_t* args, int num_args) {
  if (op < 0 || op >= spec_->num_ops()) ThrowValueError("Weaver: op index ", op, " is out of range");
  const OpSpec& o = spec_->ops[op];
  if (num_args != static_cast<int>(o.inputs.size())) {
    ThrowTypeError(spec_->DescribeOp(op), " takes ", o.inputs.size(), " argument", o.inputs.size() == 1 ? "" : "s",
                   ", got ", num_args);
  }
  if (o.has_ragged()) {
    for (int a = 0; a < num_args; ++a) {
      if (o.ragged[a]) ThrowTypeError(spec_->DescribeOp(op), " argument ", a, " takes a list of results");
    }
  }
  for (int a = 0; a < num_args; ++a) CheckArgument(op, a, args[a]);
  return AddCall(op, args, nullptr);
}

int32_t Weaver::CallRagged(int op, const int32_t* args, const int32_t* counts) {
  if (op < 0 || op >= spec_->num_ops()) ThrowValueError("Weaver: op index ", op, " is out of range");
  const OpSpec& o = spec_->ops[op];
  const int nin = static_cast<int>(o.inputs.size());
  for (int a = 0; a < nin; ++a) {
    if (counts[a] < 0 || (!o.ragged[a] && counts[a] != 1)) {
      ThrowTypeError(spec_->DescribeOp(op), " argument ", a, " takes one result, got ", counts[a]);
    }
  }
  for (int a = 0, i = 0; a < nin; ++a) {
    for (int32_t k = 0; k < counts[a]; ++k, ++i) CheckArgument(op, a, args[i]);
  }
  return AddCall(op, args, counts);
}

int32_t Weaver::AddCall(int op, const int32_t* args, const int32_t* counts) {
  const OpSpec& o = spec_->ops[op];
  const int nin = static_cast<int>(o.inputs.size());
  int64_t nargs = nin;
  if (counts) {
    nargs = 0;
    for (int a = 0; a < nin; ++a) nargs += counts[a];
  }
  int32_t depth = 1;
  for (int64_t i = 0; i < nargs; ++i) depth = std::max(depth, s_.depth[args[i]] + 1);
  EnsureDepth(depth);
  const size_t layer = static_cast<size_t>(depth - 1);
  const int64_t call = s_.calls[layer * spec_->num_ops() + op]++;
  const size_t slot = layer * spec_->num_arg_slots + spec_->arg_offset[op];
  for (int a = 0, i = 0; a < nin; ++a) {
    const int32_t n = counts ? counts[a] : 1;
    for (int32_t k = 0; k < n; ++k, ++i) s_.wiring[slot + a].push_back(Lift(args[i], depth - 1));
    if (o.ragged[a]) s_.row_lengths[slot + a].push_back(n);
  }
  return NewCallResults(op, depth, call);
}

int32_t Weaver::NewCallResults(int op, int32_t depth, int64_t call) {
  const OpSpec& o = spec_->ops[op];
  int32_t first = -1;
  for (size_t j = 0; j < o.outputs.size(); ++j) {
    int32_t r = NewResult(depth, o.outputs[j], op, static_cast<int32_t>(j), call);
    if (j == 0) first = r;
  }
  ++version_;
  return first;
}

void Weaver::AddOutput(int32_t result) {
  CheckResult(result, "output");
  s_.outputs.push_back(result);
  ++version_;
}

int32_t Weaver::Depth(int32_t result) const {
  CheckResult(result, "result");
  return s_.depth[result];
}

int Weaver::TypeShapeOf(int32_t result) const {
  CheckResult(result, "result");
  return s_.type_shape[result];
}

// ---------------------------------------------------------------- messages

std::string Weaver::Serialize() const {
  proto::WeaverMessage m;
  m.set_loom_fingerprint(spec_->fingerprint);
  m.mutable_result_depth()->Add(s_.depth.begin(), s_.depth.end());
  m.mutable_result_type_shape()->Add(s_.type_shape.begin(), s_.type_shape.end());
  m.mutable_result_op()->Add(s_.op.begin(), s_.op.end());
  m.mutable_result_output()->Add(s_.output.begin(), s_.output.end());
  m.mutable_result_position()->Add(s_.position.begin(), s_.position.end());
  const int T = spec_->num_type_shapes();
  bool any_constants = false;
  for (int t = 0; t < T; ++t) any_constants |= s_.num_constants[t] > 0;
  if (any_constants) {
    for (int t = 0; t < T; ++t) {
      proto::TensorProto* c = m.add_constants();
      if (s_.num_constants[t] == 0) continue;
      const TypeShape& ts = spec_->type_shapes[t];
      c->set_dtype(static_cast<proto::DataType>(static_cast<int>(ts.dtype)));
      for (int64_t d : ts.BatchDims(s_.num_constants[t])) c->mutable_shape()->add_dim()->set_size(d);
      c->set_tensor_content(std::string(s_.constants[t].data(), s_.constants[t].size()));
    }
  }
  const int K = spec_->num_ops();
  for (int32_t d = 1; d <= s_.deepest; ++d) {
    for (int k = 0; k < K; ++k) {
      for (size_t a = 0; a < spec_->ops[k].inputs.size(); ++a) {
        const size_t slot = static_cast<size_t>(d - 1) * spec_->num_arg_slots + spec_->arg_offset[k] + a;
        const auto& w = s_.wiring[slot];
        const auto& lengths = s_.row_lengths[slot];
        if (w.empty() && lengths.empty()) continue;
        proto::LoomWiring* pw = m.add_wiring();
        pw->set_depth(d);
        pw->set_op(k);
        pw->set_arg(static_cast<int32_t>(a));
        pw->mutable_results()->Add(w.begin(), w.end());
        pw->mutable_row_lengths()->Add(lengths.begin(), lengths.end());
      }
    }
  }
  m.mutable_outputs()->Add(s_.outputs.begin(), s_.outputs.end());
  return m.SerializeAsString();
}

void Weaver::Append(const WeaverState& o, bool rebuild_memos) {
  const int64_t first = s_.num_results();
  if (first + o.num_results() > kMaxResults) {
    ThrowValueError("Weaver: merging gives more than ", kMaxResults, " results");
  }
  const int K = spec_->num_ops();
  const int S = spec_->num_arg_slots;
  const int T = spec_->num_type_shapes();
  std::vector<int64_t> call_base = s_.calls;  // counts before the merge
  call_base.resize(static_cast<size_t>(std::max(s_.deepest, o.deepest)) * K, 0);
  if (o.deepest > s_.deepest) EnsureDepth(o.deepest);
  const auto off = static_cast<int32_t>(first);
  for (int64_t i = 0; i < o.num_results(); ++i) {
    int64_t pos = o.position[i];
    if (o.op[i] >= 0) pos += call_base[static_cast<size_t>(o.depth[i] - 1) * K + o.op[i]];
    else if (o.op[i] == kConstantSource) pos += s_.num_constants[o.type_shape[i]];
    s_.depth.push_back(o.depth[i]);
    s_.type_shape.push_back(o.type_shape[i]);
    s_.op.push_back(o.op[i]);
    s_.output.push_back(o.output[i]);
    s_.position.push_back(pos);
    lifted_.push_back(-1);
  }
  for (size_t i = 0; i < o.calls.size(); ++i) s_.calls[i] += o.calls[i];
  for (int32_t d = 1; d <= o.deepest; ++d) {
    for (int s = 0; s < S; ++s) {
      const auto& src = o.wiring[static_cast<size_t>(d - 1) * S + s];
      auto& dst = s_.wiring[static_cast<size_t>(d - 1) * S + s];
      const size_t old = dst.size();
      dst.insert(dst.end(), src.begin(), src.end());  // geometric growth: merging n messages stays linear
      for (size_t i = old; i < dst.size(); ++i) dst[i] += off;
      const auto& lengths = o.row_lengths[static_cast<size_t>(d - 1) * S + s];
      auto& to = s_.row_lengths[static_cast<size_t>(d - 1) * S + s];
      to.insert(to.end(), lengths.begin(), lengths.end());
    }
  }
  for (int t = 0; t < T; ++t) {
    s_.constants[t].insert(s_.constants[t].end(), o.constants[t].begin(), o.constants[t].end());
    s_.num_constants[t] += o.num_constants[t];
  }
  for (int32_t r : o.outputs) s_.outputs.push_back(r + off);
  if (rebuild_memos) RebuildMemos(first);
  ++version_;
}

void Weaver::RebuildMemos(int64_t first) {
  const int T = spec_->num_type_shapes();
  for (int64_t r = first; r < s_.num_results(); ++r) {
    const int32_t op = s_.op[r];
    if (op == kNamedTensorSource) {
      if (named_result_[s_.position[r]] < 0) named_result_[s_.position[r]] = static_cast<int32_t>(r);
    } else if (op >= 0 && op < T) {
      const auto& w = s_.wiring[static_cast<size_t>(s_.depth[r] - 1) * spec_->num_arg_slots + spec_->arg_offset[op]];
      const int32_t arg = w[s_.position[r]];
      if (lifted_[arg] < 0) lifted_[arg] = static_cast<int32_t>(r);
    }
  }
}

// ---------------------------------------------------------------- parsing

namespace {

template <typename... Args>
[[noreturn]] void Bad(const Args&... args) {
  ThrowInvalidArgument("invalid WeaverMessage: ", args...);
}

// The message's result columns must have one length; returns it.
int64_t CheckResultColumns(const proto::WeaverMessage& m) {
  const int64_t n = m.result_depth_size();
  if (m.result_type_shape_size() != n || m.result_op_size() != n || m.result_output_size() != n ||
      m.result_position_size() != n) {
    Bad("the result columns differ in length (depth ", n, ", type_shape ", m.result_type_shape_size(), ", op ",
        m.result_op_size(), ", output ", m.result_output_size(), ", position ", m.result_position_size(), ")");
  }
  if (n > kMaxResults) Bad(n, " results exceed the limit of ", kMaxResults);
  return n;
}

// Per type shape, the constants' rows (an empty entry: none), checked to be batches of it.
void ParseConstants(const LoomSpec& spec, const proto::WeaverMessage& m, WeaverState* s) {
  const int T = spec.num_type_shapes();
  s->constants.resize(T);
  s->num_constants.assign(T, 0);
  if (m.constants_size() != 0 && m.constants_size() != T) {
    Bad("it has ", m.constants_size(), " constants entries; the loom has ", T, " type shapes");
  }
  for (int t = 0; t < m.constants_size(); ++t) {
    const proto::TensorProto& c = m.constants(t);
    if (c.dtype() == proto::DT_INVALID && c.shape().dim_size() == 0 && c.tensor_content().empty()) continue;
    const TypeShape& ts = spec.type_shapes[t];
    Tensor value = TensorFromProto(c, StrCat("invalid WeaverMessage: constants of ", ts.ToString()));
    if (value.dtype() != ts.dtype || value.rank() != static_cast<int>(ts.shape.size()) + 1 ||
        !std::equal(ts.shape.begin(), ts.shape.end(), value.shape().begin() + 1)) {
      Bad("the constants of ", ts.ToString(), " are a ", value.DebugString(), "; expected ", DTypeName(ts.dtype),
          " of shape [n", ts.shape.empty() ? "" : ",", DimsToString(ts.shape).substr(1));
    }
    s->num_constants[t] = value.dim(0);
    const auto* p = static_cast<const char*>(value.raw_data());
    s->constants[t].assign(p, p + value.nbytes());
  }
}

// A depth-0 result: a named tensor, a batch input row or a constant, in range and of its type shape.
void CheckSourceResult(const LoomSpec& spec, const WeaverState& s, int64_t i) {
  const int32_t ts = s.type_shape[i], op = s.op[i];
  const int64_t pos = s.position[i];
  if (s.output[i] != 0) Bad("result ", i, " at depth 0 has output index ", s.output[i], "; it must be 0");
  if (op == kNamedTensorSource) {
    if (pos < 0 || pos >= static_cast<int64_t>(spec.named_tensor_names.size())) {
      Bad("result ", i, " names named tensor ", pos, ", out of range [0, ", spec.named_tensor_names.size(), ")");
    }
    if (spec.named_tensor_type_shapes[pos] != ts) {
      Bad("result ", i, " (named tensor '", spec.named_tensor_names[pos], "') has type shape ",
          spec.type_shapes[ts].ToString(), " but the tensor is ",
          spec.type_shapes[spec.named_tensor_type_shapes[pos]].ToString());
    }
  } else if (op == kBatchInputSource) {
    if (spec.batch_input_slot[ts] < 0) {
      Bad("result ", i, " reads a batch input of ", spec.type_shapes[ts].ToString(), ", which the loom has not");
    }
    if (pos < 0 || pos > INT32_MAX) Bad("result ", i, " reads batch input row ", pos, ", out of range");
  } else if (op == kConstantSource) {
    if (pos < 0 || pos >= s.num_constants[ts]) {
      Bad("result ", i, " is constant ", pos, " of ", spec.type_shapes[ts].ToString(), ", out of range [0, ",
          s.num_constants[ts], ")");
    }
  } else {
    Bad("result ", i, " at depth 0 has op ", op, "; depth-0 results come from named tensors (-1), batch inputs "
        "(-2) or constants (-3)");
  }
}

// A result at depth >= 1: an output of an op call, of that output's type shape.
void CheckCallResult(const LoomSpec& spec, const WeaverState& s, int64_t i) {
  const int32_t d = s.depth[i], ts = s.type_shape[i], op = s.op[i], out = s.output[i];
  const int64_t pos = s.position[i];
  if (op < 0 || op >= spec.num_ops()) {
    Bad("result ", i, " at depth ", d, " has op index ", op, ", out of range [0, ", spec.num_ops(), ")");
  }
  const OpSpec& o = spec.ops[op];
  if (out < 0 || out >= static_cast<int32_t>(o.outputs.size())) {
    Bad("result ", i, " is output ", out, " of ", spec.DescribeOp(op), ", which has ", o.outputs.size());
  }
  if (o.outputs[out] != ts) {
    Bad("result ", i, " has type shape ", spec.type_shapes[ts].ToString(), " but output ", out, " of ",
        spec.DescribeOp(op), " is ", spec.type_shapes[o.outputs[out]].ToString());
  }
  if (pos < 0 || pos >= s.num_results()) Bad("result ", i, " has call position ", pos, ", out of range");
}

// The result columns, each result checked; sets s->deepest.
void ParseResults(const LoomSpec& spec, const proto::WeaverMessage& m, int64_t n, WeaverState* s) {
  s->depth.assign(m.result_depth().begin(), m.result_depth().end());
  s->type_shape.assign(m.result_type_shape().begin(), m.result_type_shape().end());
  s->op.assign(m.result_op().begin(), m.result_op().end());
  s->output.assign(m.result_output().begin(), m.result_output().end());
  s->position.assign(m.result_position().begin(), m.result_position().end());
  const int T = spec.num_type_shapes();
  const int32_t max_allowed = spec.max_depth > 0 ? spec.max_depth : kMaxDepth;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t d = s->depth[i], ts = s->type_shape[i];
    if (ts < 0 || ts >= T) Bad("result ", i, " has type shape index ", ts, ", out of range [0, ", T, ")");
    if (d < 0 || d > max_allowed) {
      Bad("result ", i, " has depth ", d, (spec.max_depth > 0 ? ", beyond the loom's max_depth of " : ", beyond "),
          max_allowed);
    }
    if (d > n) Bad("result ", i, " has depth ", d, " but a depth needs a result at every depth below it");
    s->deepest = std::max(s->deepest, d);
    if (d == 0) {
      CheckSourceResult(spec, *s, i);
    } else {
      CheckCallResult(spec, *s, i);
    }
  }
  const int64_t width = std::max(spec.num_ops(), spec.num_arg_slots);
  if (static_cast<int64_t>(s->deepest) * width > 4 * n + (int64_t{1} << 20)) {
    Bad("depth ", s->deepest, " is too large for ", n, " results");
  }
}

// Calls: per (depth, op) the count, and each output's results filling
// positions 0..count-1 exactly once.
void CountCalls(const LoomSpec& spec, WeaverState* s) {
  const int K = spec.num_ops();
  const int64_t n = s->num_results();
  s->calls.assign(static_cast<size_t>(s->deepest) * K, 0);
  for (int64_t i = 0; i < n; ++i) {
    if (s->depth[i] == 0) continue;
    int64_t& c = s->calls[static_cast<size_t>(s->depth[i] - 1) * K + s->op[i]];
    c = std::max(c, s->position[i] + 1);
  }
  std::vector<int64_t> slot_base(s->calls.size() + 1, 0);  // prefix over (d, k) of calls * outputs
  for (size_t dk = 0; dk < s->calls.size(); ++dk) {
    slot_base[dk + 1] = slot_base[dk] + s->calls[dk] * static_cast<int64_t>(spec.ops[dk % K].outputs.size());
    if (slot_base[dk + 1] > n) Bad("the op call positions do not match the results (positions are not dense)");
  }
  std::vector<int32_t> filled(static_cast<size_t>(slot_base.back()), -1);
  for (int64_t i = 0; i < n; ++i) {
    if (s->depth[i] == 0) continue;
    const size_t dk = static_cast<size_t>(s->depth[i] - 1) * K + s->op[i];
    const int64_t slot = slot_base[dk] + s->output[i] * s->calls[dk] + s->position[i];
    if (filled[slot] >= 0) {
      Bad("results ", filled[slot], " and ", i, " are both output ", s->output[i], " of call ", s->position[i],
          " of ", spec.DescribeOp(s->op[i]), " at depth ", s->depth[i]);
    }
    filled[slot] = static_cast<int32_t>(i);
  }
  for (size_t dk = 0; dk < s->calls.size(); ++dk) {
    for (int64_t slot = slot_base[dk]; slot < slot_base[dk + 1]; ++slot) {
      if (filled[slot] < 0) {
        const int64_t c = s->calls[dk];
        Bad(spec.DescribeOp(static_cast<int>(dk % K)), " at depth ", dk / K + 1, " has ", c, " calls but output ",
            (slot - slot_base[dk]) / c, " of call ", (slot - slot_base[dk]) % c, " is missing");
      }
    }
  }
}

// A ragged argument's row lengths: one per call, non-negative, summing to its results.
void ParseRowLengths(const LoomSpec& spec, const proto::LoomWiring& w, int64_t calls, std::vector<int32_t>* out) {
  const int32_t d = w.depth(), op = w.op(), arg = w.arg();
  if (w.row_lengths_size() != calls) {
    Bad("ragged argument ", arg, " of ", spec.DescribeOp(op), " at depth ", d, " has row lengths for ",
        w.row_lengths_size(), " calls, but the op has ", calls, " calls there");
  }
  int64_t total = 0;
  for (int32_t len : w.row_lengths()) {
    if (len < 0) Bad("ragged argument ", arg, " of ", spec.DescribeOp(op), " at depth ", d, " has a negative row length");
    total += len;
  }
  if (total != w.results_size()) {
    Bad("ragged argument ", arg, " of ", spec.DescribeOp(op), " at depth ", d, " has row lengths summing to ", total,
        " but ", w.results_size(), " results");
  }
  out->assign(w.row_lengths().begin(), w.row_lengths().end());
}

// Each result an argument takes: in range, from the depth just below (an
// argument from the same depth or deeper would be a cycle, or a use before
// definition: the depths order every schedule), of the argument's type shape.
void CheckArgumentResults(const LoomSpec& spec, const WeaverState& s, const proto::LoomWiring& w) {
  const int32_t d = w.depth(), op = w.op(), arg = w.arg();
  const int32_t want = spec.ops[op].inputs[arg];
  const int64_t n = s.num_results();
  for (int c = 0; c < w.results_size(); ++c) {  // c: the call, or for a ragged argument the entry
    const int32_t r = w.results(c);
    if (r < 0 || r >= n) {
      Bad("argument ", arg, " of call ", c, " of ", spec.DescribeOp(op), " at depth ", d, " is result ", r,
          ", out of range [0, ", n, ")");
    }
    if (s.depth[r] >= d) {
      Bad("cycle: call ", c, " of ", spec.DescribeOp(op), " at depth ", d, " takes result ", r, " (depth ", s.depth[r],
          ") as argument ", arg, ", but an argument must be computed before the call");
    }
    if (s.depth[r] != d - 1) {
      Bad("depth mismatch: call ", c, " of ", spec.DescribeOp(op), " at depth ", d, " takes result ", r, " of depth ",
          s.depth[r], " as argument ", arg, "; arguments must come from depth ", d - 1, " (lifted by pass-through ops)");
    }
    if (s.type_shape[r] != want) {
      Bad("argument ", arg, " of ", spec.DescribeOp(op), " must be ", spec.type_shapes[want].ToString(), " but call ",
          c, " at depth ", d, " passes result ", r, " of ", spec.type_shapes[s.type_shape[r]].ToString());
    }
  }
}

// Wiring: every argument of every call, wired once, with one result per call
// (or rows of results for a ragged argument).
void ParseWiring(const LoomSpec& spec, const proto::WeaverMessage& m, WeaverState* s) {
  const int32_t D = s->deepest;
  const int K = spec.num_ops(), S = spec.num_arg_slots;
  s->wiring.assign(static_cast<size_t>(D) * S, {});
  s->row_lengths.assign(static_cast<size_t>(D) * S, {});
  std::vector<char> seen(static_cast<size_t>(D) * S, 0);
  for (const proto::LoomWiring& w : m.wiring()) {
    const int32_t d = w.depth(), op = w.op(), arg = w.arg();
    if (d < 1 || d > D) Bad("wiring at depth ", d, " is outside the schedule's depths [1, ", D, "]");
    if (op < 0 || op >= K) Bad("wiring at depth ", d, " names op ", op, ", out of range [0, ", K, ")");
    const OpSpec& o = spec.ops[op];
    if (arg < 0 || arg >= static_cast<int32_t>(o.inputs.size())) {
      Bad("wiring at depth ", d, " names argument ", arg, " of ", spec.DescribeOp(op), ", which has ", o.inputs.size());
    }
    const size_t slot = static_cast<size_t>(d - 1) * S + spec.arg_offset[op] + arg;
    if (seen[slot]) Bad("argument ", arg, " of ", spec.DescribeOp(op), " at depth ", d, " is wired twice");
    seen[slot] = 1;
    const int64_t calls = s->calls[static_cast<size_t>(d - 1) * K + op];
    if (o.ragged[arg]) {
      ParseRowLengths(spec, w, calls, &s->row_lengths[slot]);
    } else if (w.results_size() != calls || w.row_lengths_size() != 0) {
      Bad("argument ", arg, " of ", spec.DescribeOp(op), " at depth ", d, " is wired for ", w.results_size(),
          " calls, but the op has ", calls, " calls there", w.row_lengths_size() ? " (and it is not ragged)" : "");
    }
    CheckArgumentResults(spec, *s, w);
    s->wiring[slot].assign(w.results().begin(), w.results().end());
  }
  for (int32_t d = 1; d <= D; ++d) {
    for (int k = 0; k < K; ++k) {
      if (s->calls[static_cast<size_t>(d - 1) * K + k] == 0) continue;
      for (size_t a = 0; a < spec.ops[k].inputs.size(); ++a) {
        if (!seen[static_cast<size_t>(d - 1) * S + spec.arg_offset[k] + a]) {
          Bad("argument ", a, " of ", spec.DescribeOp(k), " at depth ", d, " has no wiring");
        }
      }
    }
  }
}

void ParseOutputs(const proto::WeaverMessage& m, WeaverState* s) {
  const int64_t n = s->num_results();
  for (int i = 0; i < m.outputs_size(); ++i) {
    const int32_t r = m.outputs(i);
    if (r < 0 || r >= n) Bad("output ", i, " is result ", r, ", out of range [0, ", n, ")");
  }
  s->outputs.assign(m.outputs().begin(), m.outputs().end());
}

}  // namespace

// Parsing checks the message part by part, in the order each part's checks
// need the parts before it: constants, results, calls, wiring, outputs.
WeaverState ParseWeaverMessage(const LoomSpec& spec, const void* data, size_t size) {
  // An arena: the message's many small repeated fields cost one allocation.
  google::protobuf::ArenaOptions options;
  options.start_block_size = std::min<size_t>(std::max<size_t>(size * 2, 1024), size_t{1} << 20);
  google::protobuf::Arena arena(options);
  proto::WeaverMessage& m = *google::protobuf::Arena::CreateMessage<proto::WeaverMessage>(&arena);
  if (size > static_cast<size_t>(INT_MAX) || !m.ParseFromArray(data, static_cast<int>(size))) {
    throw Error(Code::kDataLoss, "the bytes are not a serialized WeaverMessage (truncated or corrupt)");
  }
  if (m.loom_fingerprint() != spec.fingerprint) {
    ThrowInvalidArgument("the WeaverMessage was made for another loom (its loom fingerprint is ", m.loom_fingerprint(),
                         ", this loom's is ", spec.fingerprint, ")");
  }
  const int64_t n = CheckResultColumns(m);
  WeaverState s;
  ParseConstants(spec, m, &s);
  ParseResults(spec, m, n, &s);
  CountCalls(spec, &s);
  ParseWiring(spec, m, &s);
  ParseOutputs(m, &s);
  return s;
}

}  // namespace treadle::loom
