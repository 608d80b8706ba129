// The EagerTensor type as Python sees it: metadata, the buffer protocol and a
// NumPy view, and the arithmetic operators (run in C++ for speed; anything the
// fast path does not handle goes to a fallback the front end registers).
#include <array>

#include "py_common.h"
#include "tensor/half.h"
#include "util/errors.h"

namespace treadle::python {

void SetDTypeObjects(py::list objs);

namespace {

py::object g_fallback;  // treadle.framework.tensor._binary_fallback(name, x, y, reflected)
// While a GradientTape records, operators must reach treadle.framework.ops.execute
// (where the tape sees them): the fast path is then off and g_execute is set.
py::object g_execute;

const OpDef* LookupOp(const char* name) { return &OpRegistry::Global().Get(name); }

std::vector<Tensor> RunWithGil(const OpDef& op, const std::vector<Tensor>& inputs, const AttrMap& attrs) {
  if (ShouldReleaseGil(inputs)) {
    py::gil_scoped_release nogil;
    return RunOp(op, inputs, attrs);
  }
  return RunOp(op, inputs, attrs);
}

// One entry per binary dunder; `op` is null where the front end decides
// (true division, matmul, bitwise/logical), so the fallback handles those.
struct BinaryDunder {
  const char* dunder;
  const char* api_name;  // name handed to the fallback
  const char* op;
  const char* rdunder;
};
constexpr std::array<BinaryDunder, 12> kBinaryDunders = {{
    {"__add__", "add", "AddV2", "__radd__"},
    {"__sub__", "subtract", "Sub", "__rsub__"},
    {"__mul__", "multiply", "Mul", "__rmul__"},
    {"__truediv__", "truediv", nullptr, "__rtruediv__"},
    {"__floordiv__", "floordiv", "FloorDiv", "__rfloordiv__"},
    {"__mod__", "mod", "FloorMod", "__rmod__"},
    {"__pow__", "pow", "Pow", "__rpow__"},
    {"__matmul__", "matmul", nullptr, "__rmatmul__"},
    {"__and__", "and", nullptr, "__rand__"},
    {"__or__", "or", nullptr, "__ror__"},
    {"__lt__", "less", "Less", nullptr},
    {"__gt__", "greater", "Greater", nullptr},
}};
constexpr std::array<BinaryDunder, 4> kCompareDunders = {{
    {"__le__", "less_equal", "LessEqual", nullptr},
    {"__ge__", "greater_equal", "GreaterEqual", nullptr},
    {"__eq__", "equal", "Equal", nullptr},
    {"__ne__", "not_equal", "NotEqual", nullptr},
}};

py::object CallFallback(const char* name, py::handle x, py::handle y, bool reflected) {
  if (!g_fallback) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  return g_fallback(name, x, y, reflected);
}

// self <op> other (or other <op> self when reflected).
py::object RunBinary(const BinaryDunder& d, const Tensor& self, py::handle self_obj, py::handle other,
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
      const OpDef* op = LookupOp(d.op);
      static const AttrMap kNoAttrs;
      std::vector<Tensor> out = RunWithGil(*op, inputs, kNoAttrs);
      inputs[0] = Tensor();
      inputs[1] = Tensor();
      return py::cast(std::move(out[0]));
    }
  }
  return CallFallback(d.api_name, self_obj, other, reflected);
}

}  // namespace

Tensor TensorFromPyObject(py::handle obj) {
  if (py::isinstance<Tensor>(obj)) return obj.cast<Tensor>();
  if (py::isinstance<py::array>(obj)) return TensorFromNumpy(py::reinterpret_borrow<py::array>(obj), true);
  throw py::type_error("expected an EagerTensor or NumPy array, got " + py::repr(obj).cast<std::string>());
}

void RegisterTensor(py::module_& m) {
  m.def("_set_dtype_objects", &SetDTypeObjects);
  m.def("_set_binary_fallback", [](py::object fn) { g_fallback = std::move(fn); });
  m.def("_set_operator_execute", [](py::object execute) {
          g_execute = execute.is_none() ? py::object() : std::move(execute);
        },
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

  for (const BinaryDunder& d : kBinaryDunders) {
    cls.def(d.dunder, [&d](py::object self, py::object other) {
      return RunBinary(d, self.cast<const Tensor&>(), self, other, false);
    }, py::is_operator());
    if (d.rdunder) {
      cls.def(d.rdunder, [&d](py::object self, py::object other) {
        return RunBinary(d, self.cast<const Tensor&>(), self, other, true);
      }, py::is_operator());
    }
  }
  for (const BinaryDunder& d : kCompareDunders) {
    cls.def(d.dunder, [&d](py::object self, py::object other) {
      return RunBinary(d, self.cast<const Tensor&>(), self, other, false);
    }, py::is_operator());
  }
  cls.def("__neg__", [](py::object self) -> py::object {
    if (g_execute) return g_execute("Neg", py::make_tuple(self).cast<py::list>()).cast<py::list>()[0];
    return py::cast(RunOp(*LookupOp("Neg"), {self.cast<const Tensor&>()}, AttrMap())[0]);
  });
  cls.def("__abs__", [](py::object self) -> py::object {
    if (g_execute) return g_execute("Abs", py::make_tuple(self).cast<py::list>()).cast<py::list>()[0];
    return py::cast(RunOp(*LookupOp("Abs"), {self.cast<const Tensor&>()}, AttrMap())[0]);
  });
  cls.attr("__hash__") = py::none();  // elementwise __eq__ makes tensors unhashable, as in TensorFlow

  m.def("tensor_from_numpy", &TensorFromNumpy, py::arg("array"), py::arg("copy") = true,
        "A tensor from a NumPy array; with copy=False it shares the array's memory when it can.");
  m.def("scalar_tensor", [](py::handle value, py::handle dtype) {
    auto t = PyScalarToTensor(value, DTypeFromPy(dtype));
    if (!t) throw py::type_error("not a Python scalar: " + py::repr(value).cast<std::string>());
    return *t;
  });
}

}  // namespace treadle::python
