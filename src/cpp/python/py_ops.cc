// The op registry as Python sees it: descriptions to generate op functions
// from, eager execution, and inference for graph construction.
#include <cblas.h>

#include "ops/kernels/random_ops.h"
#include "ops/kernels/simd/isa.h"
#include "py_common.h"
#include "util/cancel.h"
#include "util/errors.h"
#include "util/parallel.h"

namespace treadle::python {

namespace {

py::dict DescribeOp(const OpDef& op) {
  py::dict d;
  d["name"] = op.name;
  py::list inputs;
  for (const ArgDef& a : op.inputs) {
    py::list allowed;
    for (DType t : a.allowed) allowed.append(DTypeObject(t));
    inputs.append(py::dict(py::arg("name") = a.name, py::arg("is_list") = a.is_list,
                           py::arg("type_attr") = a.type_attr, py::arg("allowed") = allowed));
  }
  d["inputs"] = inputs;
  d["outputs"] = py::cast(op.outputs);
  py::list attrs;
  for (const AttrDef& a : op.attrs) {
    py::dict ad;
    ad["name"] = a.name;
    ad["type"] = AttrTypeName(a.type);
    ad["has_default"] = a.default_value.has_value();
    ad["default"] = a.default_value ? AttrToPy(*a.default_value) : py::none();
    attrs.append(ad);
  }
  d["attrs"] = attrs;
  d["stateful"] = op.stateful;
  d["long_running"] = op.long_running;
  d["api_names"] = py::cast(op.api_names);
  d["doc"] = op.doc;
  return d;
}

// While a GradientTape records anywhere: gradient_wanted(inputs) says whether
// a tape of this thread watches one of `inputs` (then an op's gradient-only
// outputs are wanted). Unset: no tape records, nothing is wanted.
py::handle g_gradient_wanted;

bool GradientOutputsWanted(const OpDef& op, py::handle inputs) {
  if (op.gradient_only_outputs == 0) return true;
  return g_gradient_wanted && g_gradient_wanted(inputs).cast<bool>();
}

std::vector<Tensor> TensorsFromPy(const OpDef& op, py::handle seq) {
  std::vector<Tensor> out;
  for (auto item : seq) {
    if (!py::isinstance<Tensor>(item)) {
      throw py::type_error(op.name + ": expected EagerTensor inputs, got " + py::repr(item).cast<std::string>());
    }
    out.push_back(item.cast<Tensor>());
  }
  return out;
}

}  // namespace

py::list ExecuteEager(const OpDef& op, py::handle inputs_obj, py::handle attrs_obj) {
  std::vector<Tensor> inputs = TensorsFromPy(op, inputs_obj);
  std::vector<DType> dtypes(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) dtypes[i] = inputs[i].dtype();
  AttrMap attrs;
  try {
    attrs = CanonicalizeAttrs(op, AttrsFromPy(op, attrs_obj), dtypes);
  } catch (const StaticError& e) {
    throw Error(Code::kInvalidArgument, WithOpTag(e.what(), op.name));
  }
  const bool gradient_wanted = GradientOutputsWanted(op, inputs_obj);
  std::vector<Tensor> out;
  cancel::CallScope scope;
  if (op.long_running || ShouldReleaseGil(inputs)) {
    py::gil_scoped_release nogil;
    out = RunOp(op, inputs, attrs, nullptr, nullptr, gradient_wanted);
  } else {
    out = RunOp(op, inputs, attrs, nullptr, nullptr, gradient_wanted);
  }
  py::list result(out.size());
  for (size_t i = 0; i < out.size(); ++i) result[i] = py::cast(std::move(out[i]));
  return result;
}

void RegisterOps(py::module_& m) {
  // TREADLE_ISA caps the SIMD kernels from the moment the core loads; a bad
  // value fails the import with a message naming the levels.
  simd::ApplyEnvironmentCap();
  m.def("isa_info", [] {
    py::dict d;
    d["level"] = simd::CurrentLevel();
    d["target"] = simd::CurrentTarget();
    d["available"] = py::cast(simd::AvailableLevels());
    d["known"] = py::cast(simd::KnownLevels());
    return d;
  }, "The SIMD level treadle's kernels run at, Highway's target behind it, the levels this CPU offers and "
     "the level names of this CPU family.");
  m.def("set_isa", &simd::SetLevelCap, py::arg("level"),
        "Caps treadle's SIMD kernels at `level` (replacing TREADLE_ISA's cap).");
  m.def("blas_config", [] {
    return py::make_tuple(std::string(scipy_openblas_get_config()), std::string(scipy_openblas_get_corename()),
                          parallel::NumThreads());
  }, "OpenBLAS's build configuration, the kernels it chose for this CPU, and the threads treadle's pool "
     "runs matmuls and looms on (BLAS itself runs single-threaded).");
  py::class_<OpHandle>(m, "OpHandle")
      .def_property_readonly("name", [](const OpHandle& h) { return h.op->name; })
      .def("__repr__", [](const OpHandle& h) { return "<OpHandle " + h.op->name + ">"; });

  m.def("lookup_op", [](const std::string& name) { return OpHandle{&OpRegistry::Global().Get(name)}; },
        "The handle of a registered op; NotFoundError for an unknown name.");
  m.def("op_defs", [] {
    py::list l;
    for (const OpDef* op : OpRegistry::Global().All()) l.append(DescribeOp(*op));
    return l;
  });
  m.def("reset_random_op_counters", &ResetRandomOpCounters,
        "Restarts the stream of every seeded random op (td.random.set_seed).");
  m.def("op_def", [](const std::string& name) { return DescribeOp(OpRegistry::Global().Get(name)); });

  m.def("_set_gradient_wanted", [](py::object fn) { SetCallable(g_gradient_wanted, fn); },
        "None: no GradientTape records, and eager ops leave their gradient-only outputs (LoomRun's record) "
        "unwanted; a function fn(inputs) -> bool: whether a tape watches one of an op's inputs.");

  // execute(op_handle, inputs, attrs) -> list of EagerTensor
  m.def("execute", [](const OpHandle& h, py::handle inputs, py::handle attrs) {
    return ExecuteEager(*h.op, inputs, attrs);
  });

  // infer(op_handle, dtypes, shapes, values, attrs) -> (dtypes, shapes, canonical attrs)
  // Used while building graphs: values holds EagerTensors for inputs known to
  // be constant, None elsewhere. Raises TypeError/ValueError as TensorFlow does.
  m.def("infer", [](const OpHandle& h, py::handle dtypes_obj, py::handle shapes_obj, py::handle values_obj,
                    py::handle attrs_obj) {
    const OpDef& op = *h.op;
    std::vector<DType> dtypes;
    for (auto d : dtypes_obj) dtypes.push_back(DTypeFromPy(d));
    std::vector<PartialShape> shapes;
    for (auto s : shapes_obj) shapes.push_back(PartialShapeFromPy(s));
    if (shapes.size() != dtypes.size()) throw py::value_error("infer: dtypes and shapes differ in length");
    std::vector<Tensor> value_store(dtypes.size());
    std::vector<const Tensor*> values(dtypes.size(), nullptr);
    if (!values_obj.is_none()) {
      size_t i = 0;
      for (auto v : values_obj) {
        if (i >= values.size()) break;
        if (!v.is_none()) {
          value_store[i] = v.cast<Tensor>();
          values[i] = &value_store[i];
        }
        ++i;
      }
    }
    AttrMap attrs = CanonicalizeAttrs(op, AttrsFromPy(op, attrs_obj), dtypes);
    InferredOutputs out = InferOutputs(op, dtypes, shapes, values, attrs);
    py::list out_dtypes, out_shapes;
    for (DType t : out.dtypes) out_dtypes.append(DTypeObject(t));
    for (const PartialShape& s : out.shapes) out_shapes.append(PartialShapeToPy(s));
    py::dict out_attrs;
    for (const auto& [name, value] : attrs.items()) out_attrs[py::str(name)] = AttrToPy(value);
    return py::make_tuple(out_dtypes, out_shapes, out_attrs);
  });
}

}  // namespace treadle::python
