#include "loom/loom_spec.h"

#include <map>
#include <set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "tensor/tensor_proto.h"
#include "util/errors.h"

namespace treadle::loom {

std::string TypeShape::ToString() const {
  std::string s = StrCat("TypeShape(", DTypeName(dtype), ", (");
  for (size_t i = 0; i < shape.size(); ++i) s += StrCat(i ? ", " : "", shape[i]);
  if (shape.size() == 1) s += ",";
  s += ")";
  if (!tag.empty()) s += StrCat(", tag='", tag, "'");
  return s + ")";
}

Dims TypeShape::BatchDims(int64_t n) const {
  Dims d;
  d.reserve(shape.size() + 1);
  d.push_back(n);
  d.insert(d.end(), shape.begin(), shape.end());
  return d;
}

std::string LoomSpec::DescribeOp(int op) const {
  if (op < 0 || op >= num_ops()) return StrCat("op #", op);
  if (ops[op].pass_through && op < num_type_shapes()) {
    return "the pass-through op of " + type_shapes[ops[op].inputs[0]].ToString();
  }
  return "op '" + ops[op].name + "'";
}

namespace {

bool IsLoomDType(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kInt32 || t == DType::kInt64 ||
         t == DType::kBool || IsHalfFloat(t) || IsByteInt(t);
}

TypeShape TypeShapeFromProto(const proto::LoomTypeShape& p, int index) {
  const std::string where = StrCat("LoomMetadata type shape ", index);
  TypeShape ts;
  ts.dtype = DTypeFromProtoEnum(p.dtype(), where);
  if (!IsLoomDType(ts.dtype)) {
    ThrowInvalidArgument(where, ": dtype ", DTypeName(ts.dtype),
                         " cannot be a loom type (float16, bfloat16, float32, float64, int8, uint8, int32, int64 "
                         "or bool)");
  }
  if (p.shape_size() > kMaxRank) ThrowInvalidArgument(where, ": rank ", p.shape_size(), " exceeds 64");
  for (int64_t d : p.shape()) {
    if (d < 0) ThrowInvalidArgument(where, ": shape dimension ", d, " must be known and non-negative");
    ts.shape.push_back(d);
  }
  ts.tag = p.tag();
  ts.row_elements = NumElements(ts.shape);
  ts.row_bytes = static_cast<size_t>(ts.row_elements) * DTypeSize(ts.dtype);
  return ts;
}

int CheckTypeShapeIndex(int64_t ts, int num, const std::string& where) {
  if (ts < 0 || ts >= num) ThrowInvalidArgument(where, ": type shape index ", ts, " is out of range [0, ", num, ")");
  return static_cast<int>(ts);
}

// FNV-1a, 64 bit: stable across processes and platforms.
class Hasher {
 public:
  void Bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= 0x100000001b3ULL;
    }
  }
  void Int(int64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(static_cast<uint64_t>(v) >> (8 * i));
    Bytes(b, 8);
  }
  void Str(const std::string& s) {
    Int(static_cast<int64_t>(s.size()));
    Bytes(s.data(), s.size());
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace

uint64_t Fingerprint(const proto::LoomMetadata& m) {
  Hasher h;
  h.Str("treadle.loom/1");
  h.Int(m.type_shapes_size());
  for (const auto& ts : m.type_shapes()) {
    h.Int(ts.dtype());
    h.Int(ts.shape_size());
    for (int64_t d : ts.shape()) h.Int(d);
    h.Str(ts.tag());
  }
  h.Int(m.ops_size());
  for (const auto& op : m.ops()) {
    h.Str(op.name());
    h.Int(op.pass_through());
    h.Int(op.input_type_shapes_size());
    for (int t : op.input_type_shapes()) h.Int(t);
    h.Int(op.output_type_shapes_size());
    for (int t : op.output_type_shapes()) h.Int(t);
    h.Int(static_cast<int64_t>(op.body_fingerprint()));
    h.Int(op.ragged_inputs_size());
    for (int a : op.ragged_inputs()) h.Int(a);
  }
  h.Int(m.named_tensors_size());
  for (const auto& nt : m.named_tensors()) {
    h.Str(nt.name());
    h.Int(nt.type_shape());
  }
  h.Int(m.batch_input_type_shapes_size());
  for (int t : m.batch_input_type_shapes()) h.Int(t);
  return h.value();
}

std::shared_ptr<const LoomSpec> LoomSpec::FromProto(const proto::LoomMetadata& m) {
  auto spec = std::make_shared<LoomSpec>();
  const int T = m.type_shapes_size();
  if (T > kMaxTypeShapes) ThrowInvalidArgument("LoomMetadata: ", T, " type shapes exceed the limit of ", kMaxTypeShapes);
  for (int i = 0; i < T; ++i) spec->type_shapes.push_back(TypeShapeFromProto(m.type_shapes(i), i));

  if (m.ops_size() > kMaxOps) ThrowInvalidArgument("LoomMetadata: ", m.ops_size(), " ops exceed the limit of ", kMaxOps);
  if (m.ops_size() < T) {
    ThrowInvalidArgument("LoomMetadata: ops must start with the pass-through op of each of the ", T, " type shapes");
  }
  std::set<std::string> op_names;
  for (int k = 0; k < m.ops_size(); ++k) {
    const auto& p = m.ops(k);
    const std::string where = StrCat("LoomMetadata op ", k, " ('", p.name(), "')");
    OpSpec op;
    op.name = p.name();
    if (op.name.empty()) ThrowInvalidArgument(where, ": an op needs a name");
    if (!op_names.insert(op.name).second) ThrowInvalidArgument(where, ": the op name is used twice");
    if (p.input_type_shapes_size() > kMaxOpArity || p.output_type_shapes_size() > kMaxOpArity) {
      ThrowInvalidArgument(where, ": too many inputs or outputs (at most ", kMaxOpArity, ")");
    }
    for (int t : p.input_type_shapes()) op.inputs.push_back(CheckTypeShapeIndex(t, T, where));
    for (int t : p.output_type_shapes()) op.outputs.push_back(CheckTypeShapeIndex(t, T, where));
    if (op.outputs.empty()) ThrowInvalidArgument(where, ": an op needs at least one output");
    // An op's batch size is its arguments' (as in Fold): one without inputs
    // could not know how many calls it serves.
    if (op.inputs.empty()) ThrowInvalidArgument(where, ": an op needs at least one input");
    op.pass_through = p.pass_through();
    op.function_name = p.function_name();
    op.body_fingerprint = p.body_fingerprint();
    op.backward_function_name = p.backward_function_name();
    op.training_function_name = p.training_function_name();
    if (op.backward_function_name.empty() != op.training_function_name.empty()) {
      ThrowInvalidArgument(where, ": training_function_name and backward_function_name come together");
    }
    for (int32_t v : p.backward_saved()) {
      if (v < 0) ThrowInvalidArgument(where, ": backward_saved has the negative value index ", v);
      op.backward_saved.push_back(v);
    }
    if (p.num_captures() < 0) ThrowInvalidArgument(where, ": num_captures is negative");
    op.num_captures = p.num_captures();
    op.ragged.assign(op.inputs.size(), 0);
    int previous = -1;
    for (int32_t a : p.ragged_inputs()) {
      if (a <= previous || a >= static_cast<int>(op.inputs.size())) {
        ThrowInvalidArgument(where, ": ragged_inputs must be increasing input indices below ", op.inputs.size());
      }
      op.ragged[a] = 1;
      previous = a;
    }
    for (size_t a = 0; a < op.inputs.size(); ++a) {
      op.function_arg.push_back(op.num_function_args);
      op.num_function_args += op.ragged[a] ? 2 : 1;
    }
    auto increasing = [&](const google::protobuf::RepeatedField<int32_t>& v, int64_t limit, const char* what) {
      std::vector<int> out;
      for (int32_t i : v) {
        if (i < 0 || i >= limit || (!out.empty() && i <= out.back())) {
          ThrowInvalidArgument(where, ": ", what, " must be increasing indices below ", limit);
        }
        out.push_back(i);
      }
      return out;
    };
    op.backward_output_gradients =
        increasing(p.backward_output_gradients(), static_cast<int64_t>(op.outputs.size()), "backward_output_gradients");
    op.backward_input_gradients = increasing(p.backward_input_gradients(),
                                             static_cast<int64_t>(op.num_function_args) + op.num_captures,
                                             "backward_input_gradients");
    const bool must_pass = k < T;
    if (must_pass && !(op.pass_through && op.inputs == std::vector<int>{k} && op.outputs == std::vector<int>{k})) {
      ThrowInvalidArgument(where, ": op ", k, " must be the pass-through op of type shape ", k);
    }
    if (op.pass_through && !(op.inputs.size() == 1 && op.outputs == op.inputs && op.num_captures == 0 &&
                             !op.has_ragged())) {
      ThrowInvalidArgument(where, ": a pass-through op takes one value and returns it");
    }
    spec->ops.push_back(std::move(op));
  }

  std::set<std::string> tensor_names;
  for (int i = 0; i < m.named_tensors_size(); ++i) {
    const auto& nt = m.named_tensors(i);
    const std::string where = StrCat("LoomMetadata named tensor ", i, " ('", nt.name(), "')");
    if (nt.name().empty()) ThrowInvalidArgument(where, ": a named tensor needs a name");
    if (!tensor_names.insert(nt.name()).second) ThrowInvalidArgument(where, ": the name is used twice");
    spec->named_tensor_names.push_back(nt.name());
    spec->named_tensor_type_shapes.push_back(CheckTypeShapeIndex(nt.type_shape(), T, where));
  }
  spec->batch_input_slot.assign(T, -1);
  for (int t : m.batch_input_type_shapes()) {
    int ts = CheckTypeShapeIndex(t, T, "LoomMetadata batch inputs");
    if (spec->batch_input_slot[ts] >= 0) {
      ThrowInvalidArgument("LoomMetadata: ", spec->type_shapes[ts].ToString(), " has two batch inputs");
    }
    spec->batch_input_slot[ts] = static_cast<int>(spec->batch_input_type_shapes.size());
    spec->batch_input_type_shapes.push_back(ts);
  }
  if (m.max_depth() < 0 || m.max_depth() > kMaxDepth) {
    ThrowInvalidArgument("LoomMetadata: max_depth ", m.max_depth(), " is out of range [0, ", kMaxDepth, "]");
  }
  spec->max_depth = m.max_depth();
  for (const OpSpec& op : spec->ops) {
    spec->arg_offset.push_back(spec->num_arg_slots);
    spec->num_arg_slots += static_cast<int>(op.inputs.size());
  }
  spec->fingerprint = Fingerprint(m);
  return spec;
}

uint64_t FunctionBodyFingerprint(const proto::FunctionDefLibrary& library, const std::string& name) {
  std::map<std::string, const proto::FunctionDef*> by_name;
  for (const auto& f : library.function()) by_name.emplace(f.signature().name(), &f);
  std::map<std::string, std::string> canonical;  // library name -> "f<order of first use>"
  std::vector<std::string> queue;
  auto rename = [&](const std::string& n) -> const std::string& {
    auto it = canonical.find(n);
    if (it == canonical.end()) {
      it = canonical.emplace(n, StrCat("f", canonical.size())).first;
      queue.push_back(n);
    }
    return it->second;
  };
  rename(name);
  Hasher h;
  h.Str("treadle.loom.body/1");
  for (size_t q = 0; q < queue.size(); ++q) {
    auto found = by_name.find(queue[q]);
    if (found == by_name.end()) {
      ThrowInvalidArgument("the library lacks function '", queue[q], "' (called from the body of '", name, "')");
    }
    proto::FunctionDef f = *found->second;
    f.mutable_signature()->set_name(canonical.at(queue[q]));
    for (auto& node : *f.mutable_node_def()) {
      // Attrs in key order: a map's own order is not stable, and the order of
      // first use names the functions.
      std::map<std::string, proto::AttrValue*> attrs;
      for (auto& [key, attr] : *node.mutable_attr()) attrs.emplace(key, &attr);
      for (auto& [key, attr] : attrs) {
        if (attr->has_func()) attr->mutable_func()->set_name(rename(attr->func().name()));
        if (attr->has_list()) {
          for (auto& fn : *attr->mutable_list()->mutable_func()) fn.set_name(rename(fn.name()));
        }
      }
    }
    // Deterministic serialization orders the map fields (attrs, rets).
    std::string bytes;
    google::protobuf::io::StringOutputStream stream(&bytes);
    {
      google::protobuf::io::CodedOutputStream out(&stream);
      out.SetSerializationDeterministic(true);
      f.SerializeToCodedStream(&out);
    }
    h.Str(bytes);
  }
  return h.value();
}

}  // namespace treadle::loom
