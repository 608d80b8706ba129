#include "graph/elementwise_fusion.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "graph/fused_elementwise_op.h"
#include "util/errors.h"

namespace treadle::graph {
namespace {

using simd::Binary;
using simd::FusedCode;
using simd::Unary;

std::atomic<bool>& FusionFlag() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("TREADLE_ELEMENTWISE_FUSION");
    return !(v && std::strcmp(v, "0") == 0);
  }()};
  return on;
}

// A fused value's last dimension must be known and hold a whole vector at
// every SIMD level (AVX-512: 16 floats): narrower rows gain nothing.
constexpr int64_t kMinWidth = 16;
// Registers of one program at most (a bound on its scratch memory).
constexpr size_t kMaxRegisters = 512;

struct OpKind {
  FusedCode code = FusedCode::kUnary;
  Unary unary = Unary::kExp;
  Binary binary = Binary::kAdd;
  bool broadcasts = true;  // false: the op requires equal shapes (no broadcasting)
};

std::optional<OpKind> KindOf(const Node& node) {
  static const std::map<std::string, OpKind, std::less<>> kKinds = {
      {"Exp", {FusedCode::kUnary, Unary::kExp}},
      {"Log", {FusedCode::kUnary, Unary::kLog}},
      {"Tanh", {FusedCode::kUnary, Unary::kTanh}},
      {"Sigmoid", {FusedCode::kUnary, Unary::kSigmoid}},
      {"Neg", {FusedCode::kNeg}},
      {"Square", {FusedCode::kSquare}},
      {"Relu", {FusedCode::kRelu}},
      {"AddV2", {FusedCode::kBinary, Unary::kExp, Binary::kAdd}},
      {"Sub", {FusedCode::kBinary, Unary::kExp, Binary::kSub}},
      {"Mul", {FusedCode::kBinary, Unary::kExp, Binary::kMul}},
      {"RealDiv", {FusedCode::kBinary, Unary::kExp, Binary::kDiv}},
      {"Maximum", {FusedCode::kBinary, Unary::kExp, Binary::kMax}},
      {"Minimum", {FusedCode::kBinary, Unary::kExp, Binary::kMin}},
      {"SigmoidGrad", {FusedCode::kBinary, Unary::kExp, Binary::kSigmoidGrad, false}},
      {"TanhGrad", {FusedCode::kBinary, Unary::kExp, Binary::kTanhGrad, false}},
      {"AddN", {FusedCode::kBinary, Unary::kExp, Binary::kAdd, false}},  // a chain of adds, in input order
  };
  auto it = kKinds.find(node.op->name);
  if (it == kKinds.end()) return std::nullopt;
  if (node.op->name == "AddN" && node.inputs.size() < 2) return std::nullopt;
  return it->second;
}

bool WideFloat(DType dtype, const PartialShape& s) {
  return dtype == DType::kFloat32 && s.known_rank && s.rank() >= 1 && s.dims.back() >= kMinWidth;
}

// The axis of a Split whose axis input is a Const, if it is the last axis.
bool IsLastAxisSplit(const Body& body, const Node& node) {
  if (node.op->name != "Split" || node.inputs.size() != 2 || node.inputs[0].is_arg()) return false;
  const Node& axis_node = body.nodes[node.inputs[0].index];
  if (axis_node.op->name != "Const" || node.outputs.dtypes.size() < 2) return false;
  const Tensor& axis = axis_node.attrs.GetTensor("value");
  const int rank = body.StaticShape(node.inputs[1]).rank();
  if (axis.num_elements() != 1 || rank < 1) return false;
  int64_t a = axis.dtype() == DType::kInt32 ? axis.data<int32_t>()[0]
              : axis.dtype() == DType::kInt64 ? axis.data<int64_t>()[0] : -1 - rank;
  if (a < 0) a += rank;
  return a == rank - 1;
}

// The body's edges, as the pass needs them.
struct Edges {
  std::vector<std::vector<int>> consumers;  // per node: nodes reading one of its outputs (data edges)
  std::vector<char> control;                // per node: has control inputs, or is one, or is a control ret
  std::vector<char> returned;               // per node: one of its outputs is a result
};

Edges EdgesOf(const Body& body) {
  const size_t n = body.nodes.size();
  Edges e{std::vector<std::vector<int>>(n), std::vector<char>(n, 0), std::vector<char>(n, 0)};
  for (size_t v = 0; v < n; ++v) {
    const Node& node = body.nodes[v];
    for (TensorRef r : node.inputs) if (!r.is_arg()) e.consumers[r.index].push_back(static_cast<int>(v));
    if (!node.control_inputs.empty()) e.control[v] = 1;
    for (int c : node.control_inputs) e.control[c] = 1;
  }
  for (int c : body.control_rets) e.control[c] = 1;
  for (TensorRef r : body.rets) if (!r.is_arg()) e.returned[r.index] = 1;
  return e;
}

bool Candidate(const Body& body, const Edges& edges, int v) {
  const Node& node = body.nodes[v];
  if (edges.control[v] || node.effectful || node.fed) return false;
  for (size_t k = 0; k < node.outputs.dtypes.size(); ++k) {
    if (!WideFloat(node.outputs.dtypes[k], node.outputs.shapes[k])) return false;
  }
  if (KindOf(node)) return true;
  // A Split fuses when only fused ops read its pieces.
  return IsLastAxisSplit(body, node) && !edges.returned[v];
}

int Find(std::vector<int>& parent, int v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

// A group of nodes and the fused node that replaces it.
struct Group {
  std::vector<int> members;  // topological order
  std::shared_ptr<FusedProgram> program;
  std::vector<TensorRef> inputs;  // of the fused node
  std::vector<int> output_nodes;  // the member whose output 0 is fused output k
};

// Builds a group's program, or says why it cannot fuse (returns false).
class ProgramBuilder {
 public:
  ProgramBuilder(const Body& body, const Edges& edges, const std::vector<int>& group_of, int id, Group* g)
      : body_(body), edges_(edges), group_of_(group_of), id_(id), g_(*g), p_(*g->program) {}

  bool Build() {
    for (int v : g_.members) {
      if (body_.nodes[v].op->name == "Split") {
        if (split_ >= 0) return false;  // one Split per group
        split_ = v;
      }
    }
    if (split_ >= 0 && !MarkBeforeSplit()) return false;
    for (int v : g_.members) AddMember(v);
    for (int v : g_.members) {
      if (v == split_ || before_.count(v)) continue;
      if (!EmitAfterSplit(v)) return false;
    }
    return Finish();
  }

 private:
  bool InGroup(TensorRef r) const { return !r.is_arg() && group_of_[r.index] == id_; }

  // The members the Split reads (transitively): computed piece by piece, so
  // nothing else may read them.
  bool MarkBeforeSplit() {
    std::vector<int> work;
    if (InGroup(body_.nodes[split_].inputs[1])) work.push_back(body_.nodes[split_].inputs[1].index);
    while (!work.empty()) {
      int v = work.back();
      work.pop_back();
      if (!before_.insert(v).second) continue;
      for (TensorRef r : body_.nodes[v].inputs) if (InGroup(r)) work.push_back(r.index);
    }
    for (int v : before_) {
      if (edges_.returned[v]) return false;
      for (int c : edges_.consumers[v]) if (c != split_ && !before_.count(c)) return false;
    }
    p_.num_split = static_cast<int>(body_.nodes[split_].outputs.dtypes.size());
    return true;
  }

  int InputIndex(TensorRef r) {
    auto key = std::make_tuple(r.is_arg(), r.index, r.output);
    auto [it, added] = input_index_.emplace(key, static_cast<int>(g_.inputs.size()));
    if (added) g_.inputs.push_back(r);
    return it->second;
  }

  // The member as the general path runs it.
  void AddMember(int v) {
    const Node& node = body_.nodes[v];
    FusedProgram::Member m;
    m.name = node.name;
    m.op = node.op;
    m.attrs = node.attrs;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      TensorRef r = node.inputs[i];
      FusedProgram::Source s;
      if (v == split_ && i == 0) {  // the axis
        s.kind = FusedProgram::Source::Kind::kConst;
        s.index = static_cast<int>(p_.consts.size());
        p_.consts.push_back(body_.nodes[r.index].attrs.GetTensor("value"));
      } else if (InGroup(r)) {
        s.kind = FusedProgram::Source::Kind::kMember;
        s.index = member_index_.at(r.index);
        s.output = r.output;
      } else {
        s.index = InputIndex(r);
      }
      m.inputs.push_back(s);
    }
    member_index_[v] = static_cast<int>(p_.members.size());
    p_.members.push_back(std::move(m));
  }

  // Operands are encoded until Finish: a leaf l as -(l + 1), an instruction as its index.
  int32_t Leaf(TensorRef r, int block, bool before) {
    const int input = InputIndex(r);
    auto [it, added] = leaf_.emplace(std::make_tuple(input, block, before), static_cast<int32_t>(p_.leaves.size()));
    if (added) p_.leaves.push_back({input, block, before});
    return -(it->second + 1);
  }

  int32_t Emit(const Node& node, const std::vector<int32_t>& operands) {
    const OpKind kind = *KindOf(node);
    simd::FusedInstr in;
    in.code = kind.code;
    in.unary = kind.unary;
    in.binary = kind.binary;
    in.a = operands[0];
    in.b = operands.size() > 1 ? operands[1] : operands[0];
    p_.instrs.push_back(in);
    p_.broadcasts.push_back(kind.broadcasts);
    for (size_t i = 2; i < operands.size(); ++i) {  // AddN: ((x0 + x1) + x2) + ..., as its kernel adds
      in.a = static_cast<int32_t>(p_.instrs.size()) - 1;
      in.b = operands[i];
      p_.instrs.push_back(in);
      p_.broadcasts.push_back(kind.broadcasts);
    }
    return static_cast<int32_t>(p_.instrs.size()) - 1;
  }

  // Piece `block` of a value before the Split.
  int32_t BeforeSplit(TensorRef r, int block) {
    if (!InGroup(r)) return Leaf(r, block, true);
    auto key = std::make_pair(r.index, block);
    auto it = before_reg_.find(key);
    if (it != before_reg_.end()) return it->second;
    std::vector<int32_t> operands;
    for (TensorRef in : body_.nodes[r.index].inputs) operands.push_back(BeforeSplit(in, block));
    return before_reg_[key] = Emit(body_.nodes[r.index], operands);
  }

  bool EmitAfterSplit(int v) {
    const Node& node = body_.nodes[v];
    std::vector<int32_t> operands;
    for (TensorRef r : node.inputs) {
      if (!InGroup(r)) {
        operands.push_back(Leaf(r, 0, false));
      } else if (r.index == split_) {
        const int32_t piece = BeforeSplit(body_.nodes[split_].inputs[1], r.output);
        split_pieces_.insert(piece);
        operands.push_back(piece);
      } else if (before_.count(r.index)) {
        return false;  // reads a value before the Split whole
      } else {
        operands.push_back(reg_.at(r.index));
      }
    }
    reg_[v] = Emit(node, operands);
    bool read_outside = edges_.returned[v];
    for (int c : edges_.consumers[v]) read_outside = read_outside || group_of_[c] != id_;
    if (read_outside) {
      p_.outputs.emplace_back(member_index_.at(v), 0);
      p_.out_regs.push_back(reg_[v]);
      g_.output_nodes.push_back(v);
    }
    return true;
  }

  bool Finish() {
    const int32_t num_leaves = static_cast<int32_t>(p_.leaves.size());
    if (p_.outputs.empty() || num_leaves + p_.instrs.size() > kMaxRegisters) return false;
    auto reg = [num_leaves](int32_t x) { return x < 0 ? -x - 1 : num_leaves + x; };
    for (simd::FusedInstr& in : p_.instrs) {
      in.a = reg(in.a);
      in.b = reg(in.b);
    }
    for (int32_t& r : p_.out_regs) r = reg(r);
    for (int32_t r : split_pieces_) p_.split_pieces.push_back(reg(r));
    return true;
  }

  const Body& body_;
  const Edges& edges_;
  const std::vector<int>& group_of_;
  const int id_;
  Group& g_;
  FusedProgram& p_;
  int split_ = -1;
  std::set<int> before_;
  std::set<int32_t> split_pieces_;
  std::map<int, int> member_index_;
  std::map<std::tuple<bool, int, int>, int> input_index_;
  std::map<std::tuple<int, int, bool>, int32_t> leaf_;
  std::map<std::pair<int, int>, int32_t> before_reg_;
  std::map<int, int32_t> reg_;
};

// No path may leave the group and come back: the fused node would then be
// both before and after the nodes on it.
bool IsConvex(const Body& body, const std::vector<int>& group_of, int id, const std::vector<int>& members) {
  std::vector<char> depends(body.nodes.size(), 0);  // on the group
  for (int v : body.topo_order) {
    if (group_of[v] == id) {
      depends[v] = 1;
      continue;
    }
    for (TensorRef r : body.nodes[v].inputs) if (!r.is_arg() && depends[r.index]) depends[v] = 1;
    for (int c : body.nodes[v].control_inputs) if (depends[c]) depends[v] = 1;
  }
  for (int v : members) {
    for (TensorRef r : body.nodes[v].inputs) {
      if (!r.is_arg() && group_of[r.index] != id && depends[r.index]) return false;
    }
  }
  return true;
}

std::vector<Group> FindGroups(const Body& body) {
  const int n = static_cast<int>(body.nodes.size());
  const Edges edges = EdgesOf(body);
  std::vector<char> cand(n, 0);
  for (int v = 0; v < n; ++v) cand[v] = Candidate(body, edges, v);
  for (int v = 0; v < n; ++v) {
    if (!cand[v] || body.nodes[v].op->name != "Split") continue;
    for (int c : edges.consumers[v]) if (!cand[c] || body.nodes[c].op->name == "Split") cand[v] = 0;
  }
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  for (int v = 0; v < n; ++v) {
    if (!cand[v]) continue;
    for (TensorRef r : body.nodes[v].inputs) {
      if (!r.is_arg() && cand[r.index]) parent[Find(parent, v)] = Find(parent, r.index);
    }
  }
  std::map<int, std::vector<int>> components;
  for (int v : body.topo_order) if (cand[v]) components[Find(parent, v)].push_back(v);
  std::vector<int> group_of(n, -1);
  std::vector<std::vector<int>> candidates;
  for (auto& [root, members] : components) {
    if (members.size() < 2) continue;
    for (int v : members) group_of[v] = static_cast<int>(candidates.size());
    candidates.push_back(std::move(members));
  }
  std::vector<Group> groups;
  for (size_t id = 0; id < candidates.size(); ++id) {
    Group g;
    g.members = candidates[id];
    g.program = std::make_shared<FusedProgram>();
    bool ok = IsConvex(body, group_of, static_cast<int>(id), g.members) &&
              ProgramBuilder(body, edges, group_of, static_cast<int>(id), &g).Build();
    if (ok) {
      groups.push_back(std::move(g));
    } else {
      // Left unfused: its nodes are no group's, so other groups read them as inputs.
      for (int v : candidates[id]) group_of[v] = -1;
    }
  }
  return groups;
}

// A body that owns the OpDefs of its fused nodes.
struct FusedBody : Body {
  std::vector<std::unique_ptr<OpDef>> fused_ops;
};

std::string UniqueName(const Body& body, const std::string& base) {
  std::string name = base;
  for (int k = 1; body.node_index.count(name); ++k) name = StrCat(base, "_", k);
  return name;
}

// Kahn's algorithm over the nodes left in the body (members are out).
std::vector<int> TopologicalOrder(const Body& body, const std::vector<char>& removed) {
  const size_t n = body.nodes.size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> readers(n);
  for (size_t v = 0; v < n; ++v) {
    if (removed[v]) continue;
    std::vector<int> deps;
    for (TensorRef r : body.nodes[v].inputs) if (!r.is_arg()) deps.push_back(r.index);
    deps.insert(deps.end(), body.nodes[v].control_inputs.begin(), body.nodes[v].control_inputs.end());
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    pending[v] = static_cast<int>(deps.size());
    for (int u : deps) readers[u].push_back(static_cast<int>(v));
  }
  std::deque<int> ready;
  for (size_t v = 0; v < n; ++v) if (!removed[v] && pending[v] == 0) ready.push_back(static_cast<int>(v));
  std::vector<int> order;
  while (!ready.empty()) {
    int v = ready.front();
    ready.pop_front();
    order.push_back(v);
    for (int c : readers[v]) if (--pending[c] == 0) ready.push_back(c);
  }
  return order;
}

}  // namespace

bool ElementwiseFusionEnabled() { return FusionFlag().load(); }
void SetElementwiseFusion(bool on) { FusionFlag().store(on); }

std::shared_ptr<const Body> FuseElementwise(std::shared_ptr<const Body> body) {
  if (!ElementwiseFusionEnabled()) return body;
  std::vector<Group> groups = FindGroups(*body);
  if (groups.empty()) return body;
  auto out = std::make_shared<FusedBody>();
  static_cast<Body&>(*out) = *body;
  std::vector<char> removed(body->nodes.size(), 0);
  std::map<int, TensorRef> replacement;  // member -> the fused output that carries its output 0
  for (Group& g : groups) {
    const int f = static_cast<int>(out->nodes.size());
    out->fused_ops.push_back(MakeFusedElementwiseOp(g.program));
    Node node;
    node.name = UniqueName(*out, body->nodes[g.members.back()].name + "/fused");
    node.op = out->fused_ops.back().get();
    node.inputs = g.inputs;
    for (size_t k = 0; k < g.output_nodes.size(); ++k) {
      const Node& m = body->nodes[g.output_nodes[k]];
      node.outputs.dtypes.push_back(m.outputs.dtypes[0]);
      node.outputs.shapes.push_back(m.outputs.shapes[0]);
      replacement[g.output_nodes[k]] = TensorRef::Node(f, static_cast<int>(k));
    }
    for (int v : g.members) removed[v] = 1;
    out->node_index[node.name] = f;
    out->nodes.push_back(std::move(node));
    removed.push_back(0);
  }
  auto rewire = [&](TensorRef& r) {
    if (r.is_arg()) return;
    auto it = replacement.find(r.index);
    if (it != replacement.end()) r = it->second;  // fused members have one output
  };
  for (size_t v = 0; v < out->nodes.size(); ++v) {
    if (removed[v]) continue;
    for (TensorRef& r : out->nodes[v].inputs) rewire(r);
  }
  for (TensorRef& r : out->rets) rewire(r);
  out->topo_order = TopologicalOrder(*out, removed);
  // Each group is convex, but two fused groups can still form a cycle
  // through unfused nodes (each reads the other's output): then none fuses.
  const size_t kept = std::count(removed.begin(), removed.end(), 0);
  if (out->topo_order.size() != kept) return body;
  return out;
}

}  // namespace treadle::graph
