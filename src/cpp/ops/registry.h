// The op registry: every op treadle knows is registered here exactly once,
// with its signature, dtype rule, shape function and CPU kernel. Eager calls,
// graph execution and Loom layers all run ops through this table, and the
// Python front end builds its op functions from the descriptions it holds.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/attr.h"
#include "tensor/tensor.h"

namespace treadle {

struct OpDef;

struct ArgDef {
  std::string name;
  // A list argument takes zero or more tensors (at most one per op).
  bool is_list = false;
  // Arguments naming the same type attr must share a dtype; the attr (e.g.
  // "T") is then inferred from them rather than passed by the caller.
  std::string type_attr;
  // The dtypes accepted; empty means any.
  std::vector<DType> allowed;
};

struct AttrDef {
  std::string name;
  AttrType type;
  std::optional<AttrValue> default_value;  // none: the caller must give it
};

// What shape and dtype inference sees of an op call. In eager mode every input
// value is known; while building a graph only constants are.
struct InferContext {
  const OpDef& op;
  const std::vector<DType>& dtypes;
  const std::vector<PartialShape>& shapes;
  const std::vector<const Tensor*>& values;  // nullptr where unknown
  const AttrMap& attrs;

  int num_inputs() const { return static_cast<int>(dtypes.size()); }
  const Tensor* value(int i) const { return values.empty() ? nullptr : values[i]; }
  // The value of input i as a list of int64 (for axis, shape, multiples ...),
  // or nullopt when it is not known yet. Throws if it is not an integer tensor
  // of rank <= 1.
  std::optional<std::vector<int64_t>> IntValues(int i) const;
};

// Output dtypes of a call: its length is the number of outputs.
using DTypeFn = std::function<std::vector<DType>(const InferContext&)>;
using ShapeFn = std::function<std::vector<PartialShape>(const InferContext&)>;

namespace graph {
class FunctionLibrary;
}  // namespace graph

// Lets a kernel run a library function (If/While bodies, nested calls). The
// graph executor provides one; eager execution of a plain op has none.
class FunctionCaller {
 public:
  virtual ~FunctionCaller() = default;
  virtual std::vector<Tensor> CallFunction(const std::string& name, const std::vector<Tensor>& args) const = 0;
  // The library of the executable the kernel runs in: for ops that build
  // something lasting from several of its functions (the Loom ops' runtime),
  // which keeps the library alive. The ops layer only passes it along.
  virtual std::shared_ptr<const graph::FunctionLibrary> library() const = 0;
};

// Storage for kernel outputs that a caller recycles (the graph executor reuses
// the buffers of tensors whose last reader has run). Allocate returns false
// when it has nothing suitable; the kernel then allocates as usual.
class OutputAllocator {
 public:
  virtual ~OutputAllocator() = default;
  // On success moves `shape` into *out, a tensor over recycled storage.
  virtual bool Allocate(DType dtype, Dims& shape, Tensor* out) = 0;
};

class KernelContext {
 public:
  KernelContext(const OpDef& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
                const std::vector<DType>& out_dtypes, const std::vector<PartialShape>& out_shapes,
                const FunctionCaller* functions = nullptr)
      : op(op), inputs(inputs), attrs(attrs), out_dtypes(out_dtypes), out_shapes(out_shapes),
        outputs(out_dtypes.size()), functions(functions) {}
  // The same, with `outputs` taking over `storage` (whose capacity a caller
  // running many kernels recycles, to save an allocation per call) and output
  // buffers coming from `allocator` where it has one.
  KernelContext(const OpDef& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
                const std::vector<DType>& out_dtypes, const std::vector<PartialShape>& out_shapes,
                const FunctionCaller* functions, std::vector<Tensor>&& storage, OutputAllocator* allocator)
      : op(op), inputs(inputs), attrs(attrs), out_dtypes(out_dtypes), out_shapes(out_shapes),
        outputs(std::move(storage)), functions(functions), allocator(allocator) {
    if (outputs.size() == out_dtypes.size()) {
      for (Tensor& t : outputs) t = Tensor();
    } else {
      outputs.clear();
      outputs.resize(out_dtypes.size());
    }
  }

  const OpDef& op;
  const std::vector<Tensor>& inputs;
  const AttrMap& attrs;
  const std::vector<DType>& out_dtypes;
  const std::vector<PartialShape>& out_shapes;
  std::vector<Tensor> outputs;
  const FunctionCaller* functions;  // null outside a graph
  OutputAllocator* allocator = nullptr;  // recycled output storage, if the caller has any
  // Per output, whether anything will read it (null: all are read). The
  // graph executor knows this from its plan. A kernel must still produce
  // every output, but may make an unwanted one cheaply (LoomRun skips the
  // values its record would save for a backward pass).
  const char* wanted = nullptr;

  const Tensor& input(int i) const { return inputs[i]; }
  bool output_wanted(int i) const { return wanted == nullptr || wanted[i] != 0; }
  int num_inputs() const { return static_cast<int>(inputs.size()); }
  // Allocates output i with the shape inference gave it.
  Tensor& allocate_output(int i);
  // Allocates output i with an explicit shape.
  Tensor& allocate_output(int i, Dims shape);
  // Makes output i an existing tensor (for ops that forward or alias a buffer).
  void set_output(int i, Tensor t) { outputs[i] = std::move(t); }
};

using KernelFn = std::function<void(KernelContext&)>;

// How an op that calls library functions (If, While, calls) hands them its
// inputs and takes their results. Graph checks, gradients and the front end
// read this instead of knowing each control-flow op's layout.
struct FunctionAttrDef {
  std::string attr;          // the func attr naming the function: "then_branch", "body", "f"
  int first_input = 0;       // the node's inputs [first_input, ...) are the function's arguments
  std::string arg_types;     // the list(type) attr typing those arguments
  // The list(type) attr typing the function's results, which are the node's
  // outputs; empty for a predicate (one result of any dtype, not an output).
  std::string result_types;
  bool loop_body = false;    // its results are also the next values of its arguments
};

struct OpDef {
  std::string name;              // TensorFlow's raw op name where there is one: "AddV2", "Sum"
  std::vector<ArgDef> inputs;
  std::vector<std::string> outputs;  // names, for documentation; the count comes from dtype_fn
  std::vector<AttrDef> attrs;
  DTypeFn dtype_fn;
  ShapeFn shape_fn;
  KernelFn kernel;
  // Set by WithNarrowTypes (ops/narrow_types.h): runs `kernel` in the wide
  // dtypes for a call with a narrow (16-bit float, 8-bit integer) input or
  // output. RunKernel picks it only for such calls, so wide calls pay no
  // second indirect call (a shared one mispredicted on every op).
  KernelFn narrow_kernel;
  bool stateful = false;         // never constant-folded or deduplicated (random ops, print)
  bool long_running = false;     // runs long however small its inputs (a loom): eager calls release the GIL
  // Public Python names generated straight from this def ("add", "math.add");
  // empty when the front end writes a wrapper by hand.
  std::vector<std::string> api_names;
  std::string doc;
  std::vector<FunctionAttrDef> function_attrs;  // empty for ops that call no function
  // The last `gradient_only_outputs` outputs are read only by the op's
  // gradient (LoomRun's record). An eager call that no gradient tape watches
  // runs with them unwanted (KernelContext::output_wanted).
  int gradient_only_outputs = 0;

  const AttrDef* FindAttr(std::string_view attr_name) const;
  const FunctionAttrDef* FindFunctionAttr(std::string_view attr_name) const;
};

class OpRegistry {
 public:
  static OpRegistry& Global();
  void Register(OpDef def);  // aborts on a duplicate name: an op is registered once
  const OpDef* Find(std::string_view name) const;
  const OpDef& Get(std::string_view name) const;  // throws NotFound for an unknown op
  std::vector<const OpDef*> All() const;

 private:
  std::map<std::string, OpDef, std::less<>> ops_;
};

// Registration helper: `static OpRegistrar r(OpDef{...});` in a kernels file.
struct OpRegistrar {
  explicit OpRegistrar(OpDef def) { OpRegistry::Global().Register(std::move(def)); }
};

// ---- Checking a call and inferring what it produces ----

// Fills in attribute defaults, checks attribute types, and checks the input
// count and dtypes against the ArgDefs (inferring type attrs such as "T").
// Throws StaticError (TypeError/ValueError) naming the op and argument.
AttrMap CanonicalizeAttrs(const OpDef& op, const AttrMap& given, const std::vector<DType>& input_dtypes);
void CheckInputDTypes(const OpDef& op, const std::vector<DType>& input_dtypes);

struct InferredOutputs {
  std::vector<DType> dtypes;
  std::vector<PartialShape> shapes;
};
InferredOutputs InferOutputs(const OpDef& op, const std::vector<DType>& dtypes,
                             const std::vector<PartialShape>& shapes, const std::vector<const Tensor*>& values,
                             const AttrMap& attrs);

// How every error of an op call names its op: `message` + " [Op:Name]", unless
// the message already names one (an error from a nested call keeps the innermost).
std::string WithOpTag(const std::string& message, const std::string& op_name);

// Runs one op on concrete inputs. `attrs` must be canonical. Errors in the
// call itself (dtypes, shapes) surface as InvalidArgument with "[Op:Name]".
// With `gradient_outputs_wanted` false, the op's gradient-only outputs are
// unwanted (OpDef::gradient_only_outputs).
std::vector<Tensor> RunOp(const OpDef& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
                          const FunctionCaller* functions = nullptr, OutputAllocator* allocator = nullptr,
                          bool gradient_outputs_wanted = true);
// Runs only the kernel, with output dtypes and shapes inferred beforehand (the
// graph executor infers once when it plans, where shapes are static). Inputs
// must already satisfy the op's dtype rules and match `inferred`. The outputs
// replace the contents of *outputs (reusing its storage). `wanted` is
// KernelContext::wanted. `kernel`: the one ChooseKernel gave for these dtypes
// (an executor picks it once per node), or null to choose per call. Errors
// are reported as RunOp reports them.
void RunKernel(const OpDef& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
               const InferredOutputs& inferred, const FunctionCaller* functions, std::vector<Tensor>* outputs,
               OutputAllocator* allocator = nullptr, const char* wanted = nullptr,
               const KernelFn* kernel = nullptr);

// The kernel of `op` for a call with these input and output dtypes: its
// narrow_kernel for a call with a narrow input or output, else its kernel.
const KernelFn& ChooseKernel(const OpDef& op, const std::vector<DType>& input_dtypes,
                             const std::vector<DType>& output_dtypes);

// Input index range [begin, end) covered by ArgDef `arg` for a call with
// `num_inputs` inputs (list arguments take whatever the others leave).
std::pair<int, int> ArgRange(const OpDef& op, int arg, int num_inputs);

}  // namespace treadle
