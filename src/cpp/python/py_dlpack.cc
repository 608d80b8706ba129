// DLPack capsules: EagerTensor.__dlpack__/__dlpack_device__ (so that
// np.from_dlpack(t) shares memory) and from_dlpack(capsule or object with
// __dlpack__). The ABI and its validation live in tensor/dlpack.{h,cc}; this
// file only moves managed tensors in and out of PyCapsules.
#include "py_common.h"
#include "tensor/dlpack.h"
#include "util/errors.h"

namespace treadle::python {

namespace {

// Capsule destructors: a capsule nobody consumed still owns its tensor. They
// may run while an exception is being raised, so they keep its state.
void DeleteUnconsumedLegacy(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kDLTensorCapsuleName)) return;  // consumed ("used_dltensor")
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kDLTensorCapsuleName));
  if (managed && managed->deleter) managed->deleter(managed);
  PyErr_Restore(type, value, traceback);
}

void DeleteUnconsumedVersioned(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kDLTensorVersionedCapsuleName)) return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  auto* managed =
      static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kDLTensorVersionedCapsuleName));
  if (managed && managed->deleter) managed->deleter(managed);
  PyErr_Restore(type, value, traceback);
}

py::capsule Wrap(void* managed, const char* name, PyCapsule_Destructor destructor,
                 std::function<void()> delete_on_failure) {
  PyObject* capsule = PyCapsule_New(managed, name, destructor);
  if (!capsule) {
    delete_on_failure();
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

bool WantsVersioned(py::handle max_version) {
  if (max_version.is_none()) return false;
  py::tuple version(py::reinterpret_borrow<py::object>(max_version));
  if (version.size() < 1) throw py::value_error("__dlpack__: max_version must be a (major, minor) tuple");
  return version[0].cast<int>() >= static_cast<int>(kDLPackMajorVersion);
}

void CheckExportDevice(py::handle dl_device) {
  if (dl_device.is_none()) return;
  py::tuple device(py::reinterpret_borrow<py::object>(dl_device));
  if (device.size() != 2 || device[0].cast<int>() != kDLCPU) {
    throw py::buffer_error("__dlpack__: treadle tensors live on the CPU (device (1, 0)); cannot export to " +
                           py::repr(dl_device).cast<std::string>());
  }
}

// Tensor.__dlpack__ as the Python array API specifies it.
py::capsule ExportCapsule(const Tensor& t, py::handle stream, py::handle max_version, py::handle dl_device,
                          py::handle copy) {
  if (!stream.is_none()) {
    throw py::value_error("__dlpack__: treadle tensors are on the CPU, where stream must be None, got " +
                          py::repr(stream).cast<std::string>());
  }
  CheckExportDevice(dl_device);
  const bool copied = !copy.is_none() && copy.cast<bool>();
  const Tensor& source = copied ? t.Clone() : t;
  try {
    if (WantsVersioned(max_version)) {
      DLManagedTensorVersioned* managed = ExportDLPackVersioned(source, copied);
      return Wrap(managed, kDLTensorVersionedCapsuleName, DeleteUnconsumedVersioned,
                  [managed] { managed->deleter(managed); });
    }
    DLManagedTensor* managed = ExportDLPack(source);
    return Wrap(managed, kDLTensorCapsuleName, DeleteUnconsumedLegacy, [managed] { managed->deleter(managed); });
  } catch (const Error& e) {
    throw py::buffer_error(e.what());  // e.g. string tensors: the protocol's error for "cannot export"
  }
}

// The producer's deleter, run when the last treadle reference goes. Producers
// such as NumPy release Python objects in it, so it needs the GIL.
template <typename Managed>
std::function<void()> ReleaseWithGil(Managed* managed) {
  return [managed] {
    if (!managed->deleter) return;
    GilForDrop gil;
    if (gil.held()) managed->deleter(managed);
  };
}

Tensor ImportCapsule(py::capsule capsule) {
  const char* name = PyCapsule_GetName(capsule.ptr());
  if (name == nullptr) throw py::error_already_set();
  std::string n(name);
  if (n == kDLTensorCapsuleName) {
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), name));
    if (!managed) throw py::error_already_set();
    // Validation throws before ownership moves; the capsule then still frees it.
    Tensor t = ImportDLPack(managed->dl_tensor, ReleaseWithGil(managed));
    PyCapsule_SetName(capsule.ptr(), kUsedDLTensorCapsuleName);
    return t;
  }
  if (n == kDLTensorVersionedCapsuleName) {
    auto* managed = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule.ptr(), name));
    if (!managed) throw py::error_already_set();
    if (managed->version.major > kDLPackMajorVersion) {
      ThrowInvalidArgument("from_dlpack: DLPack version ", managed->version.major, ".", managed->version.minor,
                           " is newer than the ", kDLPackMajorVersion, ".x treadle reads");
    }
    Tensor t = ImportDLPack(managed->dl_tensor, ReleaseWithGil(managed));
    PyCapsule_SetName(capsule.ptr(), kUsedDLTensorVersionedCapsuleName);
    return t;
  }
  if (n == kUsedDLTensorCapsuleName || n == kUsedDLTensorVersionedCapsuleName) {
    throw py::value_error("from_dlpack: this DLPack capsule was already consumed; each capsule can be used once");
  }
  throw py::type_error("from_dlpack: a capsule named '" + n + "' is not a DLPack tensor");
}

void CheckProducerDevice(py::handle obj) {
  if (!py::hasattr(obj, "__dlpack_device__")) return;
  py::tuple device(obj.attr("__dlpack_device__")());
  if (device.size() != 2) throw py::type_error("from_dlpack: __dlpack_device__ must return a (type, id) pair");
  int type = device[0].cast<int>();
  if (type != kDLCPU) {
    ThrowInvalidArgument("from_dlpack: the tensor is on DLPack device ", py::repr(device).cast<std::string>(),
                         "; treadle only reads CPU tensors (device type 1)");
  }
}

Tensor FromDLPack(py::object obj) {
  if (PyCapsule_CheckExact(obj.ptr())) return ImportCapsule(py::reinterpret_borrow<py::capsule>(obj));
  if (!py::hasattr(obj, "__dlpack__")) {
    throw py::type_error("from_dlpack expects a DLPack capsule or an object with __dlpack__, got " +
                         py::repr(py::type::of(obj)).cast<std::string>());
  }
  CheckProducerDevice(obj);
  py::object capsule;
  try {
    capsule = obj.attr("__dlpack__")(py::arg("max_version") = py::make_tuple(kDLPackMajorVersion,
                                                                            kDLPackMinorVersion));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    capsule = obj.attr("__dlpack__")();  // a producer from before DLPack 1.0
  }
  if (!PyCapsule_CheckExact(capsule.ptr())) {
    throw py::type_error("from_dlpack: __dlpack__ returned " + py::repr(py::type::of(capsule)).cast<std::string>() +
                         ", not a capsule");
  }
  return ImportCapsule(py::reinterpret_borrow<py::capsule>(capsule));
}

}  // namespace

void RegisterDLPack(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("EagerTensor"));
  cls.def("__dlpack__", &ExportCapsule, py::arg("stream") = py::none(), py::kw_only(),
          py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
          "A DLPack capsule sharing the tensor's memory (read-only; copy=True gives the consumer its own copy).");
  cls.def("__dlpack_device__", [](const Tensor&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); },
          "(1, 0): treadle tensors live in CPU memory.");
  m.def("from_dlpack", &FromDLPack, py::arg("obj"),
        "A tensor sharing the memory of a DLPack capsule or of an object with __dlpack__ (e.g. a NumPy array).");
}

}  // namespace treadle::python
