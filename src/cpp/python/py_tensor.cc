// The EagerTensor type as Python sees it: metadata, the buffer protocol and a
// NumPy view, and the arithmetic operators (run in C++ for speed; anything the
// fast path does not handle goes to a fallback the front end registers).
#include <deque>
#include <optional>
#include <string>
#include <tuple>

#include "py_common.h"
#include "tensor/half.h"
#include "util/errors.h"

namespace treadle::python {

void SetDTypeObjects(py::list objs);

void SetCallable(py::handle& slot, const py::object& fn) {
  py::handle old = slot;
  slot = fn.is_none() ? py::handle() : fn.inc_ref();
  old.dec_ref();
}

namespace {

// Python callables the front end sets. Handles, not py::objects: a static
// py::object would be released after the interpreter has finalized.
py::handle g_fallback;  // treadle.framework.tensor._binary_fallback(name, x, y, reflected)
// While a GradientTape records, operators must reach treadle.framework.op_execution.execute
// (where the tape sees them): the fast path is then off and g_execute is set.
py::handle g_execute;

const OpDef* LookupOp(const char* name) { return &OpRegistry::Global().Get(name); }

std::vector<Tensor> RunWithGil(const OpDef& op, const std::vector<Tensor>& inputs, const AttrMap& attrs) {
  if (ShouldReleaseGil(inputs)) {
    py::gil_scoped_release nogil;
    return RunOp(op, inputs, attrs);
  }
  return RunOp(op, inputs, attrs);
}

// One of Tensor's operators as an EagerTensor runs it. The table is the front
// end's (treadle/ops/math_ops.py), installed once at import: `op` is null
// where the front end decides (true division, matmul, bitwise/logical), so the
// fallback handles those.
struct EagerOperator {
  std::string name;    // the operator's function name, handed to the fallback
  const OpDef* op;     // run directly when both operands share a dtype; null: always the fallback
};
std::deque<EagerOperator> g_operators;  // stable addresses: the installed methods point into it

py::object CallFallback(const char* name, py::handle x, py::handle y, bool reflected) {
  if (!g_fallback) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  return g_fallback(name, x, y, reflected);
}

// self <op> other (or other <op> self when reflected).
py::object RunBinary(const EagerOperator& d, const Tensor& self, py::handle self_obj, py::handle other,
                     bool reflected) {
  if (d.op && !g_execute) {
    const Tensor* other_t = nullptr;
    std::optional<Tensor> scalar;
    if (py::isinstance<Tensor>(other)) {
      other_t = &other.cast<const Tensor&>();
      if (other_t->dtype() != self.dtype()) other_t = nullptr;  // let the fallback raise TF's error
    } else {
      scalar = PyScalarToTensor(other, self.dtype());
      if (scalar) other_t = &*scalar;
    }
    if (other_t) {
      static thread_local std::vector<Tensor> inputs(2);
      inputs[0] = reflected ? *other_t : self;
      inputs[1] = reflected ? self : *other_t;
      static const AttrMap kNoAttrs;
      std::vector<Tensor> out = RunWithGil(*d.op, inputs, kNoAttrs);
      inputs[0] = Tensor();
      inputs[1] = Tensor();
      return py::cast(std::move(out[0]));
    }
  }
  return CallFallback(d.name.c_str(), self_obj, other, reflected);
}

void DefineMethod(py::handle cls, const std::string& dunder, py::cpp_function fn) {
  py::setattr(cls, dunder.c_str(), fn);
}

void InstallBinary(py::handle cls, const std::string& dunder, const EagerOperator& d, bool reflected) {
  DefineMethod(cls, dunder, py::cpp_function([&d, reflected](py::object self, py::object other) {
    return RunBinary(d, self.cast<const Tensor&>(), self, other, reflected);
  }, py::name(dunder.c_str()), py::is_method(cls), py::is_operator()));
}

void InstallUnary(py::handle cls, const std::string& dunder, const OpDef* op) {
  DefineMethod(cls, dunder, py::cpp_function([op](py::object self) -> py::object {
    // While a tape records, the op goes through execute, where the tape sees it.
    if (g_execute) return g_execute(op->name, py::make_tuple(self).cast<py::list>()).cast<py::list>()[0];
    return py::cast(RunOp(*op, {self.cast<const Tensor&>()}, AttrMap())[0]);
  }, py::name(dunder.c_str()), py::is_method(cls)));
}

void InstallEagerOperators(py::list binary, py::list unary) {
  py::handle cls = py::type::of<Tensor>();
  for (py::handle row : binary) {
    auto [dunder, rdunder, name, op] = row.cast<std::tuple<std::string, std::optional<std::string>, std::string,
                                                           std::optional<std::string>>>();
    g_operators.push_back({name, op ? LookupOp(op->c_str()) : nullptr});
    InstallBinary(cls, dunder, g_operators.back(), false);
    if (rdunder) InstallBinary(cls, *rdunder, g_operators.back(), true);
  }
  for (py::handle row : unary) {
    auto [dunder, op] = row.cast<std::tuple<std::string, std::string>>();
    InstallUnary(cls, dunder, LookupOp(op.c_str()));
  }
}

}  // namespace

Tensor TensorFromPyObject(py::handle obj) {
  if (py::isinstance<Tensor>(obj)) return obj.cast<Tensor>();
  if (py::isinstance<py::array>(obj)) return TensorFromNumpy(py::reinterpret_borrow<py::array>(obj), true);
  throw py::type_error("expected an EagerTensor or NumPy array, got " + py::repr(obj).cast<std::string>());
}

void RegisterTensor(py::module_& m) {
  m.def("_set_dtype_objects", &SetDTypeObjects);
  m.def("_set_binary_fallback", [](py::object fn) { SetCallable(g_fallback, fn); });
  m.def("_set_operator_execute", [](py::object execute) { SetCallable(g_execute, execute); },
        "None: operators of eager tensors run ops directly (the fast path); a function: they call "
        "execute(op_name, inputs) instead (set while a GradientTape records).");

  py::class_<Tensor> cls(m, "EagerTensor", py::buffer_protocol(), py::dynamic_attr());
  cls.def_property_readonly("dtype", [](const Tensor& t) { return DTypeObject(t.dtype()); })
      .def("_shape_tuple", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
      .def_property_readonly("ndim", &Tensor::rank)
      .def("_num_elements", &Tensor::num_elements)
      .def("_numpy_view", &TensorToNumpy, "A read-only NumPy view sharing the tensor's memory.")
      .def("_same_buffer", [](const Tensor& a, const Tensor& b) { return a.buffer() == b.buffer(); })
      .def("_data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw_data()); })
      .def("_scalar_item", [](const Tensor& t) -> py::object {
        if (t.num_elements() != 1) {
          throw py::type_error("only a tensor with exactly one element can be converted to a Python scalar, got shape " +
                               DimsToString(t.shape()));
        }
        switch (t.dtype()) {
          case DType::kFloat32: return py::float_(*t.data<float>());
          case DType::kFloat64: return py::float_(*t.data<double>());
          case DType::kInt32: return py::int_(*t.data<int32_t>());
          case DType::kInt64: return py::int_(*t.data<int64_t>());
          case DType::kBool: return py::bool_(*t.data<bool>());
          case DType::kString: return py::bytes(*t.data<std::string>());
          case DType::kInt8: return py::int_(*t.data<int8_t>());
          case DType::kUInt8: return py::int_(*t.data<uint8_t>());
          case DType::kFloat16: return py::float_(F16ToF32(*t.data<uint16_t>()));
          case DType::kBFloat16: return py::float_(BF16ToF32(*t.data<uint16_t>()));
          default: throw py::type_error(std::string("a ") + DTypeName(t.dtype()) + " tensor has no Python value");
        }
      })
      .def_buffer([](const Tensor& t) -> py::buffer_info {
        if (t.dtype() == DType::kString || IsHandle(t.dtype())) {
          throw py::type_error(std::string("a ") + DTypeName(t.dtype()) + " tensor has no buffer");
        }
        std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
        std::vector<py::ssize_t> strides(shape.size());
        py::ssize_t s = static_cast<py::ssize_t>(DTypeSize(t.dtype()));
        for (size_t i = shape.size(); i-- > 0;) {
          strides[i] = s;
          s *= shape[i];
        }
        std::string fmt;
        switch (t.dtype()) {
          case DType::kFloat32: fmt = py::format_descriptor<float>::format(); break;
          case DType::kFloat64: fmt = py::format_descriptor<double>::format(); break;
          case DType::kInt32: fmt = py::format_descriptor<int32_t>::format(); break;
          case DType::kInt64: fmt = py::format_descriptor<int64_t>::format(); break;
          case DType::kInt8: fmt = "b"; break;
          case DType::kUInt8: fmt = "B"; break;
          case DType::kFloat16: fmt = "e"; break;
          case DType::kBool: fmt = "?"; break;
          default:  // bfloat16 has no buffer-protocol format
            throw py::type_error(std::string("a ") + DTypeName(t.dtype()) +
                                 " tensor has no buffer-protocol format; use .numpy() (with ml_dtypes) or DLPack");
        }
        return py::buffer_info(t.raw_data(), static_cast<py::ssize_t>(DTypeSize(t.dtype())), fmt,
                               static_cast<py::ssize_t>(shape.size()), shape, strides, /*readonly=*/true);
      });

  cls.attr("__hash__") = py::none();  // elementwise __eq__ makes tensors unhashable, as in TensorFlow

  m.def("_install_eager_operators", &InstallEagerOperators, py::arg("binary"), py::arg("unary"),
        "Defines EagerTensor's operators from the front end's operator table: binary rows are "
        "(dunder, reflected dunder or None, name, op or None), unary rows (dunder, op).");
  m.def("tensor_from_numpy", &TensorFromNumpy, py::arg("array"), py::arg("copy") = true,
        "A tensor from a NumPy array; with copy=False it shares the array's memory when it can.");
  m.def("scalar_tensor", [](py::handle value, py::handle dtype) {
    auto t = PyScalarToTensor(value, DTypeFromPy(dtype));
    if (!t) throw py::type_error("not a Python scalar: " + py::repr(value).cast<std::string>());
    return *t;
  });
}

}  // namespace treadle::python
