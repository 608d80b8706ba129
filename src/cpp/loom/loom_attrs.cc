#include "loom/loom_attrs.h"

#include <climits>
#include <functional>
#include <string_view>
#include <type_traits>
#include <variant>
#include <unordered_map>

#include "tensor/tensor_proto.h"
#include "util/errors.h"

namespace treadle::loom {

namespace {

// Per op, `loom_op_functions` holds three indices into the `functions` attr
// (-1: none): the forward, training and backward function.
constexpr int kFunctionsPerOp = 3;

// Reads a list(int) attr front to back, bounds-checked: the per-op entries of
// variable length are a count followed by that many values.
class IntReader {
 public:
  IntReader(const AttrMap& attrs, const char* name) : name_(name), v_(attrs.GetIntList(name)) {}

  int32_t Next(const std::string& where) {
    if (pos_ >= v_.size()) ThrowInvalidArgument("attr '", name_, "' ends early (at ", where, ")");
    const int64_t x = v_[pos_++];
    if (x < INT32_MIN || x > INT32_MAX) ThrowInvalidArgument("attr '", name_, "' holds ", x, " (at ", where, ")");
    return static_cast<int32_t>(x);
  }
  // A count, then that many values, appended to *out.
  void Counted(const std::string& where, google::protobuf::RepeatedField<int32_t>* out) {
    const int32_t n = Next(where);
    if (n < 0 || static_cast<size_t>(n) > v_.size() - pos_) {
      ThrowInvalidArgument("attr '", name_, "' counts ", n, " values at ", where, " where ", v_.size() - pos_,
                           " are left");
    }
    for (int32_t i = 0; i < n; ++i) out->Add(Next(where));
  }
  void CheckDone() const {
    if (pos_ != v_.size()) ThrowInvalidArgument("attr '", name_, "' has ", v_.size() - pos_, " values too many");
  }

 private:
  const char* name_;
  const std::vector<int64_t>& v_;
  size_t pos_ = 0;
};

template <typename Repeated>
void AppendCounted(const Repeated& values, std::vector<int64_t>* out) {
  out->push_back(values.size());
  out->insert(out->end(), values.begin(), values.end());
}

}  // namespace

std::vector<AttrDef> LoomAttrDefs() {
  return {{"loom_type_dtypes", AttrType::kTypeList, std::nullopt},
          {"loom_type_shapes", AttrType::kShapeList, std::nullopt},
          {"loom_type_tags", AttrType::kStringList, std::nullopt},
          {"loom_op_names", AttrType::kStringList, std::nullopt},
          {"loom_op_pass_through", AttrType::kIntList, std::nullopt},
          {"loom_op_inputs", AttrType::kIntList, std::nullopt},
          {"loom_op_ragged_inputs", AttrType::kIntList, std::nullopt},
          {"loom_op_outputs", AttrType::kIntList, std::nullopt},
          {"loom_op_functions", AttrType::kIntList, std::nullopt},
          {"loom_op_num_captures", AttrType::kIntList, std::nullopt},
          {"loom_op_body_fingerprints", AttrType::kIntList, std::nullopt},
          {"loom_op_backward", AttrType::kIntList, std::nullopt},
          {"loom_named_tensors", AttrType::kStringList, std::nullopt},
          {"loom_named_tensor_type_shapes", AttrType::kIntList, std::nullopt},
          {"loom_batch_input_type_shapes", AttrType::kIntList, std::nullopt},
          {"loom_max_depth", AttrType::kInt, std::nullopt},
          {kFunctionsAttr, AttrType::kFuncList, std::nullopt}};
}

namespace {

// A hash of the values of an attr (of the types LoomAttrDefs uses), for an
// in-memory table only: it hashes whole buffers at a time (std::hash of their
// bytes), since every run of a Loom op computes it.
class AttrHasher {
 public:
  void Int(int64_t v) { Mix(static_cast<uint64_t>(v)); }
  void Str(std::string_view s) { Mix(std::hash<std::string_view>()(s)); }
  void Value(const AttrValue& value) {
    Int(static_cast<int64_t>(value.index()));
    std::visit([this](const auto& x) { Add(x); }, value);
  }
  uint64_t value() const { return h_; }

 private:
  void Mix(uint64_t v) { h_ = (h_ ^ v) * 0x9e3779b97f4a7c15ULL + (h_ >> 29); }
  template <typename T> void Bytes(const std::vector<T>& v) {
    Int(static_cast<int64_t>(v.size()));
    Str(std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)));
  }
  void Add(int64_t v) { Int(v); }
  void Add(const std::string& s) { Str(s); }
  void Add(const std::vector<int64_t>& v) { Bytes(v); }
  void Add(const std::vector<DType>& v) { Bytes(v); }
  void Add(const std::vector<PartialShape>& v) {
    Int(static_cast<int64_t>(v.size()));
    for (const PartialShape& s : v) {
      Int(s.known_rank ? static_cast<int64_t>(s.dims.size()) : -1);
      Bytes(s.dims);
    }
  }
  void Add(const std::vector<std::string>& v) {
    Int(static_cast<int64_t>(v.size()));
    for (const std::string& s : v) Str(s);
  }
  void Add(const std::vector<FuncRef>& v) {
    Int(static_cast<int64_t>(v.size()));
    for (const FuncRef& f : v) Str(f.name);
  }
  template <typename T> void Add(const T&) {}  // types no loom attr has (the type index is hashed)
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

bool SameValue(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&b](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor> || std::is_same_v<T, double>) {
          return false;  // no loom attr has these types
        } else {
          return x == std::get<T>(b);
        }
      },
      a);
}

}  // namespace

AttrMap LoomAttrsOf(const AttrMap& attrs) {
  AttrMap out;
  for (const AttrDef& def : LoomAttrDefs()) {
    if (const AttrValue* v = attrs.Find(def.name)) out.Set(def.name, *v);
  }
  return out;
}

namespace {

bool IsLoomAttr(const std::string& name) { return name.compare(0, 5, "loom_") == 0 || name == kFunctionsAttr; }

}  // namespace

// Both walk the attrs in their order, which is the OpDef's (canonical attrs,
// LoomAttrsOf and the eager registry's copies all follow LoomAttrDefs), so a
// run costs one pass and no lookups by name.
uint64_t HashLoomAttrs(const AttrMap& attrs) {
  AttrHasher h;
  for (const auto& [name, value] : attrs.items()) {
    if (!IsLoomAttr(name)) continue;
    h.Str(name);
    h.Value(value);
  }
  return h.value();
}

bool SameLoomAttrs(const AttrMap& a, const AttrMap& b) {
  auto x = a.items().begin(), y = b.items().begin();
  const auto x_end = a.items().end(), y_end = b.items().end();
  while (true) {
    while (x != x_end && !IsLoomAttr(x->first)) ++x;
    while (y != y_end && !IsLoomAttr(y->first)) ++y;
    if (x == x_end || y == y_end) return x == x_end && y == y_end;
    if (x->first != y->first || !SameValue(x->second, y->second)) return false;
    ++x;
    ++y;
  }
}

void MetadataToAttrs(const proto::LoomMetadata& m, AttrMap* attrs) {
  std::vector<DType> dtypes;
  std::vector<PartialShape> shapes;
  std::vector<std::string> tags;
  for (const auto& ts : m.type_shapes()) {
    dtypes.push_back(DTypeFromProtoEnum(ts.dtype(), "LoomMetadata type shape"));
    shapes.push_back(PartialShape(Dims(ts.shape().begin(), ts.shape().end())));
    tags.push_back(ts.tag());
  }
  std::vector<std::string> names;
  std::vector<int64_t> pass_through, inputs, ragged, outputs, function_index, captures, fingerprints, backward;
  std::vector<FuncRef> functions;
  std::unordered_map<std::string, int64_t> index;  // function name -> position in `functions`
  auto function = [&](const std::string& name) -> int64_t {
    if (name.empty()) return -1;
    auto [it, added] = index.emplace(name, static_cast<int64_t>(functions.size()));
    if (added) functions.push_back(FuncRef{name});
    return it->second;
  };
  for (const auto& op : m.ops()) {
    names.push_back(op.name());
    pass_through.push_back(op.pass_through());
    AppendCounted(op.input_type_shapes(), &inputs);
    AppendCounted(op.ragged_inputs(), &ragged);
    AppendCounted(op.output_type_shapes(), &outputs);
    function_index.push_back(function(op.function_name()));
    function_index.push_back(function(op.training_function_name()));
    function_index.push_back(function(op.backward_function_name()));
    captures.push_back(op.num_captures());
    fingerprints.push_back(static_cast<int64_t>(op.body_fingerprint()));
    AppendCounted(op.backward_output_gradients(), &backward);
    AppendCounted(op.backward_saved(), &backward);
    AppendCounted(op.backward_input_gradients(), &backward);
  }
  std::vector<std::string> named;
  std::vector<int64_t> named_type_shapes;
  for (const auto& nt : m.named_tensors()) {
    named.push_back(nt.name());
    named_type_shapes.push_back(nt.type_shape());
  }
  attrs->Set("loom_type_dtypes", std::move(dtypes));
  attrs->Set("loom_type_shapes", std::move(shapes));
  attrs->Set("loom_type_tags", std::move(tags));
  attrs->Set("loom_op_names", std::move(names));
  attrs->Set("loom_op_pass_through", std::move(pass_through));
  attrs->Set("loom_op_inputs", std::move(inputs));
  attrs->Set("loom_op_ragged_inputs", std::move(ragged));
  attrs->Set("loom_op_outputs", std::move(outputs));
  attrs->Set("loom_op_functions", std::move(function_index));
  attrs->Set("loom_op_num_captures", std::move(captures));
  attrs->Set("loom_op_body_fingerprints", std::move(fingerprints));
  attrs->Set("loom_op_backward", std::move(backward));
  attrs->Set("loom_named_tensors", std::move(named));
  attrs->Set("loom_named_tensor_type_shapes", std::move(named_type_shapes));
  attrs->Set("loom_batch_input_type_shapes",
             std::vector<int64_t>(m.batch_input_type_shapes().begin(), m.batch_input_type_shapes().end()));
  attrs->Set("loom_max_depth", static_cast<int64_t>(m.max_depth()));
  attrs->Set(kFunctionsAttr, std::move(functions));
}

namespace {

void TypeShapesFromAttrs(const AttrMap& attrs, proto::LoomMetadata* m) {
  const auto& dtypes = attrs.GetTypeList("loom_type_dtypes");
  const auto& shapes = attrs.GetShapeList("loom_type_shapes");
  const auto& tags = attrs.GetStringList("loom_type_tags");
  if (shapes.size() != dtypes.size() || tags.size() != dtypes.size()) {
    ThrowInvalidArgument("attrs loom_type_dtypes, loom_type_shapes and loom_type_tags differ in length (",
                         dtypes.size(), ", ", shapes.size(), ", ", tags.size(), ")");
  }
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (!shapes[i].known_rank) ThrowInvalidArgument("type shape ", i, " of attr loom_type_shapes has an unknown rank");
    auto* ts = m->add_type_shapes();
    ts->set_dtype(static_cast<proto::DataType>(static_cast<int>(dtypes[i])));
    for (int64_t d : shapes[i].dims) ts->add_shape(d);  // unknown (-1) dims are refused by LoomSpec
    ts->set_tag(tags[i]);
  }
}

void OpsFromAttrs(const AttrMap& attrs, proto::LoomMetadata* m) {
  const auto& names = attrs.GetStringList("loom_op_names");
  const auto& functions = attrs.GetFuncList(kFunctionsAttr);
  const size_t n = names.size();
  auto one_per_op = [&](const char* name, size_t per_op) -> const std::vector<int64_t>& {
    const auto& v = attrs.GetIntList(name);
    if (v.size() != n * per_op) {
      ThrowInvalidArgument("attr '", name, "' has ", v.size(), " values for ", n, " ops (", per_op, " per op)");
    }
    return v;
  };
  const auto& pass_through = one_per_op("loom_op_pass_through", 1);
  const auto& captures = one_per_op("loom_op_num_captures", 1);
  const auto& fingerprints = one_per_op("loom_op_body_fingerprints", 1);
  const auto& function_index = one_per_op("loom_op_functions", kFunctionsPerOp);
  IntReader inputs(attrs, "loom_op_inputs"), ragged(attrs, "loom_op_ragged_inputs"),
      outputs(attrs, "loom_op_outputs"), backward(attrs, "loom_op_backward");
  auto function_name = [&](size_t k, int which) -> std::string {
    const int64_t f = function_index[k * kFunctionsPerOp + which];
    if (f == -1) return "";
    if (f < 0 || static_cast<size_t>(f) >= functions.size()) {
      ThrowInvalidArgument("attr loom_op_functions of op ", k, " holds ", f, ", not -1 or an index into the ",
                           functions.size(), " functions of attr '", kFunctionsAttr, "'");
    }
    return functions[f].name;
  };
  for (size_t k = 0; k < n; ++k) {
    const std::string where = StrCat("op ", k);
    auto* op = m->add_ops();
    op->set_name(names[k]);
    op->set_pass_through(pass_through[k] != 0);
    inputs.Counted(where, op->mutable_input_type_shapes());
    ragged.Counted(where, op->mutable_ragged_inputs());
    outputs.Counted(where, op->mutable_output_type_shapes());
    op->set_function_name(function_name(k, 0));
    op->set_training_function_name(function_name(k, 1));
    op->set_backward_function_name(function_name(k, 2));
    if (captures[k] < 0 || captures[k] > INT32_MAX) {
      ThrowInvalidArgument("attr loom_op_num_captures of op ", k, " is ", captures[k]);
    }
    op->set_num_captures(static_cast<int32_t>(captures[k]));
    op->set_body_fingerprint(static_cast<uint64_t>(fingerprints[k]));
    backward.Counted(where, op->mutable_backward_output_gradients());
    backward.Counted(where, op->mutable_backward_saved());
    backward.Counted(where, op->mutable_backward_input_gradients());
  }
  inputs.CheckDone();
  ragged.CheckDone();
  outputs.CheckDone();
  backward.CheckDone();
}

}  // namespace

proto::LoomMetadata MetadataFromAttrs(const AttrMap& attrs) {
  proto::LoomMetadata m;
  TypeShapesFromAttrs(attrs, &m);
  OpsFromAttrs(attrs, &m);
  const auto& named = attrs.GetStringList("loom_named_tensors");
  const auto& named_type_shapes = attrs.GetIntList("loom_named_tensor_type_shapes");
  if (named.size() != named_type_shapes.size()) {
    ThrowInvalidArgument("attrs loom_named_tensors and loom_named_tensor_type_shapes differ in length");
  }
  for (size_t i = 0; i < named.size(); ++i) {
    if (named_type_shapes[i] < INT32_MIN || named_type_shapes[i] > INT32_MAX) {
      ThrowInvalidArgument("attr loom_named_tensor_type_shapes holds ", named_type_shapes[i]);
    }
    auto* nt = m.add_named_tensors();
    nt->set_name(named[i]);
    nt->set_type_shape(static_cast<int32_t>(named_type_shapes[i]));
  }
  for (int64_t t : attrs.GetIntList("loom_batch_input_type_shapes")) {
    if (t < INT32_MIN || t > INT32_MAX) ThrowInvalidArgument("attr loom_batch_input_type_shapes holds ", t);
    m.add_batch_input_type_shapes(static_cast<int32_t>(t));
  }
  const int64_t max_depth = attrs.GetInt("loom_max_depth");
  if (max_depth < 0 || max_depth > INT32_MAX) ThrowInvalidArgument("attr loom_max_depth is ", max_depth);
  m.set_max_depth(static_cast<int32_t>(max_depth));
  return m;
}

}  // namespace treadle::loom
