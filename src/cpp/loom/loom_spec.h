// A loom's description as the Weaver and the runtime use it: its type shapes,
// ops (the pass-through op of each type shape first), named tensors and batch
// inputs. Built once from a LoomMetadata message, which it validates.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/shape.h"
#include "treadle/loom.pb.h"

namespace treadle::loom {

// Where a depth-0 result comes from (its `op` column in a WeaverMessage).
constexpr int32_t kNamedTensorSource = -1;
constexpr int32_t kBatchInputSource = -2;
constexpr int32_t kConstantSource = -3;

// Bounds that keep a hostile schedule from exhausting memory or overflowing
// the 32-bit result ids and positions.
constexpr int64_t kMaxResults = int64_t{1} << 28;
constexpr int32_t kMaxDepth = 1 << 20;
constexpr int kMaxTypeShapes = 1 << 12;
constexpr int kMaxOps = 1 << 14;
constexpr int kMaxOpArity = 1 << 10;

struct TypeShape {
  DType dtype = DType::kInvalid;
  Dims shape;       // without the batch dimension
  std::string tag;
  int64_t row_elements = 1;
  size_t row_bytes = 0;

  // "TypeShape(float32, [3], tag='x')"
  std::string ToString() const;
  Dims BatchDims(int64_t n) const;  // [n, *shape]
};

struct OpSpec {
  std::string name;
  std::vector<int> inputs;   // type shape indices
  std::vector<char> ragged;  // per input: does each call take a list of results there?
  // Per input, its argument of the op's function; a ragged input is two
  // (values, then int64 row splits). num_function_args excludes captures.
  std::vector<int> function_arg;
  int num_function_args = 0;
  std::vector<int> outputs;
  bool pass_through = false;
  std::string function_name;
  // For gradients (see LoomOpDef): the forward function that also returns
  // the intermediates, and the backward function reading them.
  std::string training_function_name;
  std::string backward_function_name;
  uint64_t body_fingerprint = 0;
  std::vector<int> backward_output_gradients;  // outputs whose gradients the backward function takes
  std::vector<int> backward_saved;             // forward values (arguments, then intermediates) it reads
  std::vector<int> backward_input_gradients;   // forward arguments whose gradients it returns
  int num_captures = 0;

  bool has_ragged() const { return num_function_args != static_cast<int>(inputs.size()); }
};

struct LoomSpec {
  std::vector<TypeShape> type_shapes;
  std::vector<OpSpec> ops;
  std::vector<std::string> named_tensor_names;
  std::vector<int> named_tensor_type_shapes;
  std::vector<int> batch_input_type_shapes;  // batch input slot -> type shape
  std::vector<int> batch_input_slot;         // type shape -> slot, or -1
  int32_t max_depth = 0;                     // 0: unbounded
  uint64_t fingerprint = 0;
  // Argument slots: op k's argument a is slot arg_offset[k] + a.
  std::vector<int> arg_offset;
  int num_arg_slots = 0;

  int num_type_shapes() const { return static_cast<int>(type_shapes.size()); }
  int num_ops() const { return static_cast<int>(ops.size()); }
  // "op 'add'" or "the pass-through op of TypeShape(...)", for messages.
  std::string DescribeOp(int op) const;

  // Validates `metadata` (InvalidArgument naming what is wrong).
  static std::shared_ptr<const LoomSpec> FromProto(const proto::LoomMetadata& metadata);
};

// The fingerprint of a loom's structure (type shapes, op signatures and body
// fingerprints, named tensors, batch inputs), independent of function names
// and max_depth, so a schedule woven in one process runs in any loom of the
// same structure and no other.
uint64_t Fingerprint(const proto::LoomMetadata& metadata);

// A fingerprint of what library function `name` computes: its body and the
// bodies of the functions it calls, with function names replaced by their
// order of first use, so that two traces of the same code agree (trace names
// carry unique suffixes) and different code differs. InvalidArgument when
// `name` or a function it calls is missing from `library`.
uint64_t FunctionBodyFingerprint(const proto::FunctionDefLibrary& library, const std::string& name);

}  // namespace treadle::loom
