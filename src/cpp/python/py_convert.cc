// Python <-> core conversions used across the bindings.
#include <cstring>
#include <limits>

#include "py_common.h"
#include "tensor/half.h"
#include "util/errors.h"

namespace treadle::python {

namespace {
py::object* g_dtype_objects = nullptr;  // indexed by DType; owned forever
}

void SetDTypeObjects(py::list objs) {
  if (!g_dtype_objects) g_dtype_objects = new py::object[kNumDTypes];
  // Gaps in the numbering are None in `objs` and stay unset (null) here.
  for (int i = 0; i < kNumDTypes && i < static_cast<int>(objs.size()); ++i) {
    if (IsValidDType(i)) g_dtype_objects[i] = objs[i];
  }
}

py::object DTypeObject(DType t) {
  if (!g_dtype_objects) throw std::runtime_error("treadle dtypes are not registered");
  return g_dtype_objects[static_cast<int>(t)];
}

// ml_dtypes' bfloat16 (the NumPy dtype JAX and TensorFlow use) is a kind 'V'
// dtype named "bfloat16".
static bool IsMlDtypesBFloat16(const py::dtype& dt) {
  return dt.itemsize() == 2 && py::str(dt).cast<std::string>() == "bfloat16";
}

static DType DTypeFromNumpy(const py::dtype& dt) {
  char kind = dt.kind();
  size_t size = dt.itemsize();
  if (kind == 'f' && size == 2) return DType::kFloat16;
  if (kind == 'i' && size == 1) return DType::kInt8;
  if (kind == 'u' && size == 1) return DType::kUInt8;
  if (IsMlDtypesBFloat16(dt)) return DType::kBFloat16;
  if (kind == 'f' && size == 4) return DType::kFloat32;
  if (kind == 'f' && size == 8) return DType::kFloat64;
  if (kind == 'i' && size == 4) return DType::kInt32;
  if (kind == 'i' && size == 8) return DType::kInt64;
  if (kind == 'b') return DType::kBool;
  if (kind == 'U' || kind == 'S' || kind == 'O') return DType::kString;
  return DType::kInvalid;
}

DType DTypeFromPy(py::handle obj) {
  if (g_dtype_objects) {
    for (int i = 1; i < kNumDTypes; ++i) {
      if (g_dtype_objects[i] && obj.is(g_dtype_objects[i])) return static_cast<DType>(i);
    }
  }
  if (py::isinstance<py::str>(obj)) {
    DType t = DTypeFromName(obj.cast<std::string>());
    if (t != DType::kInvalid) return t;
    throw py::type_error("unknown dtype name '" + obj.cast<std::string>() + "'");
  }
  if (py::hasattr(obj, "_type_enum")) {
    int v = obj.attr("_type_enum").cast<int>();
    if (IsValidDType(v)) return static_cast<DType>(v);
  }
  try {
    py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(obj));
    DType t = DTypeFromNumpy(dt);
    if (t != DType::kInvalid && dt.kind() != 'O') return t;
  } catch (const py::error_already_set&) {
  }
  throw py::type_error("Cannot convert " + py::repr(obj).cast<std::string>() + " to a treadle DType");
}

std::optional<Tensor> PyScalarToTensor(py::handle obj, DType hint) {
  PyObject* p = obj.ptr();
  const bool is_bool = PyBool_Check(p);
  const bool is_int = !is_bool && PyLong_Check(p);
  const bool is_float = PyFloat_Check(p);
  const bool is_str = PyUnicode_Check(p) || PyBytes_Check(p);
  if (!is_bool && !is_int && !is_float && !is_str) return std::nullopt;
  auto cannot = [&]() -> std::optional<Tensor> {
    throw py::type_error("Cannot convert " + py::repr(obj).cast<std::string>() + " to EagerTensor of dtype " +
                         DTypeName(hint));
  };
  switch (hint) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kFloat16:
    case DType::kBFloat16: {
      if (!is_int && !is_float) return cannot();
      double v = PyFloat_AsDouble(p);
      if (v == -1.0 && PyErr_Occurred()) throw py::error_already_set();
      if (hint == DType::kFloat64) return Tensor::Scalar<double>(v);
      if (hint == DType::kFloat32) return Tensor::Scalar<float>(static_cast<float>(v));
      Tensor t(hint, {});  // rounded once from the double, as NumPy's astype does
      *t.data<uint16_t>() = hint == DType::kFloat16 ? F64ToF16(v) : F64ToBF16(v);
      return t;
    }
    case DType::kInt8:
    case DType::kUInt8: {
      if (!is_int) return cannot();
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
      const long long lo = hint == DType::kInt8 ? -128 : 0, hi = hint == DType::kInt8 ? 127 : 255;
      if (overflow || v < lo || v > hi) {
        throw py::value_error("Can't convert Python int " + py::repr(obj).cast<std::string>() + " to " +
                              DTypeName(hint) + ": out of range");
      }
      if (hint == DType::kInt8) return Tensor::Scalar<int8_t>(static_cast<int8_t>(v));
      return Tensor::Scalar<uint8_t>(static_cast<uint8_t>(v));
    }
    case DType::kInt32:
    case DType::kInt64: {
      if (!is_int) return cannot();
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
      if (overflow || (hint == DType::kInt32 && (v < std::numeric_limits<int32_t>::min() ||
                                                 v > std::numeric_limits<int32_t>::max()))) {
        throw py::value_error("Can't convert Python int " + py::repr(obj).cast<std::string>() + " to " +
                              DTypeName(hint) + ": out of range");
      }
      if (hint == DType::kInt32) return Tensor::Scalar<int32_t>(static_cast<int32_t>(v));
      return Tensor::Scalar<int64_t>(static_cast<int64_t>(v));
    }
    case DType::kBool:
      if (!is_bool) return cannot();
      return Tensor::Scalar<bool>(p == Py_True);
    case DType::kString: {
      if (!is_str) return cannot();
      Tensor t(DType::kString, {});
      if (PyBytes_Check(p)) {
        *t.data<std::string>() = std::string(PyBytes_AS_STRING(p), PyBytes_GET_SIZE(p));
      } else {
        Py_ssize_t len = 0;
        const char* s = PyUnicode_AsUTF8AndSize(p, &len);
        if (!s) throw py::error_already_set();
        *t.data<std::string>() = std::string(s, len);
      }
      return t;
    }
    default:
      return cannot();
  }
}

static std::string PyToBytes(py::handle item) {
  if (PyBytes_Check(item.ptr())) return item.cast<std::string>();
  if (PyUnicode_Check(item.ptr())) return item.cast<std::string>();  // UTF-8
  throw py::type_error("Cannot convert " + py::repr(item).cast<std::string>() + " to a string tensor element");
}

Tensor TensorFromNumpy(py::array arr, bool copy) {
  DType t = DTypeFromNumpy(arr.dtype());
  if (t == DType::kInvalid) {
    throw py::type_error("NumPy dtype " + py::str(arr.dtype()).cast<std::string>() +
                         " is not supported by treadle (supported: float16, bfloat16 (ml_dtypes), float32, float64, "
                         "int8, uint8, int32, int64, bool, string)");
  }
  if (arr.ndim() > kMaxRank) throw py::value_error("array rank exceeds treadle's limit of 64");
  Dims dims(arr.shape(), arr.shape() + arr.ndim());
  if (t == DType::kString) {
    Tensor out(DType::kString, dims);
    py::object flat = py::reinterpret_borrow<py::object>(arr).attr("ravel")();
    std::string* dst = out.data<std::string>();
    int64_t i = 0;
    for (auto item : flat.attr("tolist")()) dst[i++] = PyToBytes(item);
    return out;
  }
  const bool contiguous = (arr.flags() & py::array::c_style) != 0;
  const bool aligned = (arr.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0;
  const bool native = arr.dtype().byteorder() != '>';
  if (!copy && contiguous && aligned && native) {
    PyObject* owner = arr.ptr();
    Py_INCREF(owner);
    auto buf = Buffer::Wrap(arr.mutable_data(), static_cast<size_t>(arr.nbytes()), [owner] {
      GilForDrop gil;
      if (gil.held()) Py_DECREF(owner);
    });
    return Tensor(t, dims, std::move(buf));
  }
  // Copy (through NumPy, which handles strides and byte order) into our own buffer.
  py::array src = py::array::ensure(arr, py::array::c_style);
  if (!native) src = py::reinterpret_steal<py::array>(
      py::reinterpret_borrow<py::object>(src).attr("astype")(src.dtype().attr("newbyteorder")("=")).release());
  Tensor out(t, dims);
  if (out.nbytes()) std::memcpy(out.raw_data(), src.data(), out.nbytes());
  return out;
}

// NumPy has no bfloat16: ml_dtypes (installed with treadle's test extras, and
// by JAX and TensorFlow) provides the one everyone exchanges.
static py::dtype BFloat16NumpyDType() {
  try {
    return py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
  } catch (const py::error_already_set&) {
    throw py::type_error("a bfloat16 tensor needs the ml_dtypes package for its NumPy value (pip install "
                         "ml_dtypes); without it, td.cast to float32 first or exchange it through DLPack");
  }
}

static py::dtype NumpyDType(DType t) {
  switch (t) {
    case DType::kFloat32: return py::dtype("float32");
    case DType::kFloat64: return py::dtype("float64");
    case DType::kInt32: return py::dtype("int32");
    case DType::kInt64: return py::dtype("int64");
    case DType::kBool: return py::dtype("bool");
    case DType::kFloat16: return py::dtype("float16");
    case DType::kInt8: return py::dtype("int8");
    case DType::kUInt8: return py::dtype("uint8");
    case DType::kBFloat16: return BFloat16NumpyDType();
    default: return py::dtype("object");
  }
}

py::object TensorToNumpy(const Tensor& t) {
  if (IsHandle(t.dtype())) {
    throw py::type_error(std::string("a ") + DTypeName(t.dtype()) + " tensor has no NumPy value");
  }
  if (t.dtype() == DType::kString) {
    py::array out(py::dtype("object"), t.shape());
    auto** slots = static_cast<PyObject**>(out.mutable_data());
    const std::string* src = t.data<std::string>();
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      PyObject* b = PyBytes_FromStringAndSize(src[i].data(), static_cast<Py_ssize_t>(src[i].size()));
      if (!b) throw py::error_already_set();
      Py_XDECREF(slots[i]);
      slots[i] = b;
    }
    return std::move(out);
  }
  // The capsule keeps the buffer alive as long as the array (or views of it) lives.
  auto* keep = new std::shared_ptr<Buffer>(t.buffer());
  py::capsule base(keep, [](void* p) { delete static_cast<std::shared_ptr<Buffer>*>(p); });
  py::array arr(NumpyDType(t.dtype()), t.shape(), t.raw_data(), base);
  py::detail::array_proxy(arr.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return std::move(arr);
}

PartialShape PartialShapeFromPy(py::handle obj) {
  if (obj.is_none()) return PartialShape::Unknown();
  Dims dims;
  for (auto d : obj) {
    if (d.is_none()) dims.push_back(kUnknownDim);
    else {
      int64_t v = d.cast<int64_t>();
      if (v < -1) throw py::value_error("shape dimensions must be >= 0 or None, got " + std::to_string(v));
      dims.push_back(v);
    }
  }
  if (dims.size() > static_cast<size_t>(kMaxRank)) throw py::value_error("shape rank exceeds 64");
  return PartialShape(std::move(dims));
}

py::object PartialShapeToPy(const PartialShape& s) {
  if (!s.known_rank) return py::none();
  py::tuple t(s.dims.size());
  for (size_t i = 0; i < s.dims.size(); ++i) {
    t[i] = s.dims[i] < 0 ? py::object(py::none()) : py::object(py::int_(s.dims[i]));
  }
  return std::move(t);
}

Tensor TensorFromPyObject(py::handle obj);  // defined in py_tensor.cc

AttrMap AttrsFromPy(const OpDef& op, py::handle dict) {
  AttrMap attrs;
  if (dict.is_none()) return attrs;
  if (py::isinstance<PyPreparedAttrs>(dict)) {
    const auto& prepared = dict.cast<const PyPreparedAttrs&>();
    if (prepared.op != &op) throw py::type_error(op.name + " got attrs prepared for " + prepared.op->name);
    return prepared.attrs;
  }
  for (auto item : py::reinterpret_borrow<py::dict>(dict)) {
    std::string name = item.first.cast<std::string>();
    const AttrDef* def = op.FindAttr(name);
    if (!def) throw py::type_error(op.name + " got an unexpected attribute '" + name + "'");
    py::handle v = item.second;
    try {
      switch (def->type) {
        case AttrType::kInt: attrs.Set(name, v.cast<int64_t>()); break;
        case AttrType::kFloat: attrs.Set(name, v.cast<double>()); break;
        case AttrType::kBool: attrs.Set(name, v.cast<bool>()); break;
        case AttrType::kString: attrs.Set(name, v.cast<std::string>()); break;
        case AttrType::kType: attrs.Set(name, DTypeFromPy(v)); break;
        case AttrType::kShape: attrs.Set(name, PartialShapeFromPy(v)); break;
        case AttrType::kIntList: attrs.Set(name, v.cast<std::vector<int64_t>>()); break;
        case AttrType::kTypeList: {
          std::vector<DType> ts;
          for (auto x : v) ts.push_back(DTypeFromPy(x));
          attrs.Set(name, ts);
          break;
        }
        case AttrType::kTensor: attrs.Set(name, TensorFromPyObject(v)); break;
        case AttrType::kFunc: attrs.Set(name, FuncRef{v.cast<std::string>()}); break;
        case AttrType::kShapeList: {
          std::vector<PartialShape> shapes;
          for (auto x : v) shapes.push_back(PartialShapeFromPy(x));
          attrs.Set(name, shapes);
          break;
        }
        case AttrType::kStringList: attrs.Set(name, v.cast<std::vector<std::string>>()); break;
        case AttrType::kFuncList: {
          std::vector<FuncRef> functions;
          for (auto x : v) functions.push_back(FuncRef{x.cast<std::string>()});
          attrs.Set(name, functions);
          break;
        }
      }
    } catch (const py::cast_error&) {
      throw py::type_error(op.name + ": attribute '" + name + "' expects a value of type " +
                           AttrTypeName(def->type) + ", got " + py::repr(v).cast<std::string>());
    }
  }
  return attrs;
}

py::object AttrToPy(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> py::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, DType>) return DTypeObject(x);
        else if constexpr (std::is_same_v<T, PartialShape>) return PartialShapeToPy(x);
        else if constexpr (std::is_same_v<T, std::vector<DType>>) {
          py::list l;
          for (DType t : x) l.append(DTypeObject(t));
          return std::move(l);
        } else if constexpr (std::is_same_v<T, std::vector<PartialShape>>) {
          py::list l;
          for (const auto& s : x) l.append(PartialShapeToPy(s));
          return std::move(l);
        } else if constexpr (std::is_same_v<T, FuncRef>) return py::str(x.name);
        else if constexpr (std::is_same_v<T, std::vector<FuncRef>>) {
          py::list l;
          for (const FuncRef& f : x) l.append(py::str(f.name));
          return std::move(l);
        }
        else if constexpr (std::is_same_v<T, std::string>) return py::str(x);
        else return py::cast(x);
      },
      v);
}

bool ShouldReleaseGil(const std::vector<Tensor>& inputs) {
  int64_t n = 0;
  for (const auto& t : inputs) n += t.num_elements();
  return n > (1 << 15);
}

}  // namespace treadle::python
