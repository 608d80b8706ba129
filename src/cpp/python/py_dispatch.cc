// The hit path of td.function dispatch. A call's positional arguments are
// encoded into a byte string (dtype and dims of each eager tensor, the value
// of each Python literal, the shape of containers) without creating Python
// objects; the string finds the ConcreteFunction the slow path chose for the
// same kind of call, and the eager tensors come out flattened in order.
// Anything the encoder does not know (other objects, symbolic tensors) makes
// it answer None, and the Python slow path (TraceTypes) decides.
#include <algorithm>
#include <cstring>
#include <string>
#include <iterator>
#include <unordered_map>
#include <unordered_set>

#include "py_common.h"

namespace treadle::python {
namespace {

class KeyEncoder {
 public:
  // Appends the encoding of `obj`; false when it cannot be encoded.
  bool Encode(PyObject* obj, int depth = 0) {
    if (depth > 32) return false;
    if (obj == Py_None) return Put('n');
    if (PyBool_Check(obj)) return Put(obj == Py_True ? 'T' : 'F');
    if (PyLong_CheckExact(obj)) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
      if (overflow) return false;
      return Put('i') && PutRaw(&v, sizeof v);
    }
    if (PyFloat_CheckExact(obj)) {
      double v = PyFloat_AS_DOUBLE(obj);
      return Put('f') && PutRaw(&v, sizeof v);
    }
    if (PyUnicode_CheckExact(obj)) {
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(obj, &n);
      if (!s) {
        PyErr_Clear();
        return false;
      }
      return Put('s') && PutSize(n) && PutRaw(s, n);
    }
    if (PyTuple_CheckExact(obj) || PyList_CheckExact(obj)) {
      bool is_tuple = PyTuple_CheckExact(obj);
      Py_ssize_t n = is_tuple ? PyTuple_GET_SIZE(obj) : PyList_GET_SIZE(obj);
      if (!Put(is_tuple ? '(' : '[') || !PutSize(n)) return false;
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (!Encode(is_tuple ? PyTuple_GET_ITEM(obj, i) : PyList_GET_ITEM(obj, i), depth + 1)) return false;
      }
      return true;
    }
    if (PyDict_CheckExact(obj)) return EncodeDict(obj, depth);
    if (py::isinstance<Tensor>(obj)) {
      const Tensor& t = py::handle(obj).cast<const Tensor&>();
      int rank = t.rank();
      if (!Put('t') || !Put(static_cast<char>(t.dtype())) || !PutSize(rank)) return false;
      PutRaw(t.shape().data(), sizeof(int64_t) * rank);
      tensors_.push_back(obj);
      return true;
    }
    return false;
  }

  const std::string& key() const { return key_; }
  const std::vector<PyObject*>& tensors() const { return tensors_; }

 private:
  // Dicts with string keys, in sorted key order (the order nest flattens them in).
  bool EncodeDict(PyObject* obj, int depth) {
    std::vector<std::pair<std::string, PyObject*>> items;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(obj, &pos, &k, &v)) {
      if (!PyUnicode_CheckExact(k)) return false;
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(k, &n);
      if (!s) {
        PyErr_Clear();
        return false;
      }
      items.emplace_back(std::string(s, n), v);
    }
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    if (!Put('{') || !PutSize(static_cast<Py_ssize_t>(items.size()))) return false;
    for (auto& [name, value] : items) {
      if (!PutSize(static_cast<Py_ssize_t>(name.size())) || !PutRaw(name.data(), name.size())) return false;
      if (!Encode(value, depth + 1)) return false;
    }
    return true;
  }
  bool Put(char c) {
    key_.push_back(c);
    return true;
  }
  bool PutSize(Py_ssize_t n) {
    int64_t v = n;
    return PutRaw(&v, sizeof v);
  }
  bool PutRaw(const void* p, size_t n) {
    key_.append(static_cast<const char*>(p), n);
    return true;
  }
  std::string key_;
  std::vector<PyObject*> tensors_;
};

// Every lookup advances the cache's clock and stamps the entry it finds, so
// the Python side can count calls (its retracing warning) and evict the
// least recently used traces, fast-path hits included.
class DispatchCache {
 public:
  // (value, flat tensor list) for a known kind of call, else None.
  py::object Lookup(py::tuple args) {
    ++clock_;
    KeyEncoder enc;
    if (!EncodeArgs(args, enc)) return py::none();
    auto it = entries_.find(enc.key());
    if (it == entries_.end()) return py::none();
    it->second.last_use = clock_;
    py::list flat(enc.tensors().size());
    for (size_t i = 0; i < enc.tensors().size(); ++i) flat[i] = py::reinterpret_borrow<py::object>(enc.tensors()[i]);
    return py::make_tuple(it->second.value, flat);
  }

  // Remembers `value` for calls like `args`, if `flat` (the slow path's tensor
  // arguments) is exactly the encoder's tensors in order. Returns whether it did.
  bool Insert(py::tuple args, py::list flat, py::object value) {
    KeyEncoder enc;
    if (!EncodeArgs(args, enc)) return false;
    const auto& mine = enc.tensors();
    if (mine.size() != flat.size()) return false;
    for (size_t i = 0; i < mine.size(); ++i) {
      if (flat[i].ptr() != mine[i]) return false;
    }
    entries_[enc.key()] = Entry{std::move(value), clock_};
    return true;
  }

  // Advances the clock for a call that did not come through Lookup.
  uint64_t Tick() { return ++clock_; }
  uint64_t clock() const { return clock_; }

  // [(value, last use)] of every entry.
  py::list LastUses() const {
    py::list out;
    for (const auto& [key, e] : entries_) out.append(py::make_tuple(e.value, e.last_use));
    return out;
  }

  // Forgets the entries whose value is one of `values` (by identity).
  void Discard(py::list values) {
    std::unordered_set<PyObject*> drop;
    for (py::handle v : values) drop.insert(v.ptr());
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = drop.count(it->second.value.ptr()) ? entries_.erase(it) : std::next(it);
    }
  }

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    py::object value;
    uint64_t last_use = 0;
  };
  static bool EncodeArgs(const py::tuple& args, KeyEncoder& enc) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (!enc.Encode(args[i].ptr())) return false;
    }
    return true;
  }
  std::unordered_map<std::string, Entry> entries_;
  uint64_t clock_ = 0;
};

}  // namespace

void RegisterDispatch(py::module_& m) {
  py::class_<DispatchCache>(m, "DispatchCache")
      .def(py::init<>())
      .def("lookup", &DispatchCache::Lookup, py::arg("args"))
      .def("insert", &DispatchCache::Insert, py::arg("args"), py::arg("flat"), py::arg("value"))
      .def("tick", &DispatchCache::Tick)
      .def_property_readonly("clock", &DispatchCache::clock)
      .def("last_uses", &DispatchCache::LastUses)
      .def("discard", &DispatchCache::Discard, py::arg("values"))
      .def("__len__", &DispatchCache::size);
}

}  // namespace treadle::python
