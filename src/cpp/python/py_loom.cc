// The Loom as Python sees it: the Weaver (results are plain ints; each op is
// a METH_FASTCALL builtin so a call from Python costs well under a
// microsecond), schedule merging, the runtime's validation, and record files.
#include <climits>
#include <unordered_map>

#include "data/record_file.h"
#include "graph/graph_def_writer.h"
#include "graph/loader.h"
#include "loom/loom_attrs.h"
#include "loom/loom_registry.h"
#include "loom/record_io.h"
#include "py_common.h"
#include "util/cancel.h"
#include "util/errors.h"

namespace treadle::python {

namespace {

using loom::LoomSpec;
using loom::Weaver;

struct PyLoomSpec {
  std::shared_ptr<const LoomSpec> spec;
};

struct PyWeaver {
  std::shared_ptr<Weaver> weaver;
  Tensor schedule;                // the finalised schedule of `schedule_version`
  uint64_t schedule_version = ~uint64_t{0};
};

template <typename T>
T ParseProto(const py::bytes& data, const char* what) {
  std::string_view view(data);
  T msg;
  if (view.size() > static_cast<size_t>(INT_MAX) || !msg.ParseFromArray(view.data(), static_cast<int>(view.size()))) {
    throw Error(Code::kDataLoss, StrCat(what, ": the bytes are not a serialized ", what));
  }
  return msg;
}

// A result id: any Python integer (int, NumPy integer scalars, anything with
// __index__) that fits 32 bits, but not bool, which is an int to Python yet
// never a result. Returns false (maybe with a Python error set) otherwise.
bool ResultId(PyObject* obj, int32_t* id) {
  if (PyBool_Check(obj) || PyFloat_Check(obj)) return false;
  long v;
  if (PyLong_CheckExact(obj)) {
    v = PyLong_AsLong(obj);
  } else {
    // NumPy's bool_ has no __index__, so it is refused here too.
    PyObject* index = PyNumber_Index(obj);
    if (!index) return false;
    v = PyLong_AsLong(index);
    Py_DECREF(index);
  }
  if ((v == -1 && PyErr_Occurred()) || v < INT32_MIN || v > INT32_MAX) return false;
  *id = static_cast<int32_t>(v);
  return true;
}

// ---- the fast op caller: a builtin function whose self is a capsule
struct OpCaller {
  std::shared_ptr<Weaver> weaver;
  int op;
  int num_outputs;
  bool ragged;  // the op has ragged inputs: its arguments may be lists
};
constexpr const char* kCallerCapsule = "treadle.loom.OpCaller";

void SetPyErrorFromCurrent() {
  try {
    throw;
  } catch (const StaticError& e) {
    PyErr_SetString(e.kind() == StaticKind::kType ? PyExc_TypeError : PyExc_ValueError, e.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

// The arguments of a call of an op with ragged inputs: one result per input,
// or for a ragged input a list or tuple of results (possibly empty), laid out
// for Weaver::CallRagged. False with a Python error set on bad input.
bool RaggedCallArgs(const Weaver& w, int op, PyObject* const* args, Py_ssize_t nargs, std::vector<int32_t>* flat,
                    std::vector<int32_t>* counts) {
  const loom::OpSpec& o = w.spec().ops[op];
  if (nargs != static_cast<Py_ssize_t>(o.inputs.size())) {
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments, got %zd", w.spec().DescribeOp(op).c_str(),
                 static_cast<Py_ssize_t>(o.inputs.size()), nargs);
    return false;
  }
  for (Py_ssize_t a = 0; a < nargs; ++a) {
    PyObject* arg = args[a];
    if (!o.ragged[a]) {
      int32_t id;
      if (!ResultId(arg, &id)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s argument %zd must be a result of this weaver (an int), got %R",
                     w.spec().DescribeOp(op).c_str(), a, arg);
        return false;
      }
      flat->push_back(id);
      counts->push_back(1);
      continue;
    }
    if (!PyList_Check(arg) && !PyTuple_Check(arg)) {
      PyErr_Format(PyExc_TypeError, "%s argument %zd is ragged: it takes a list or tuple of results, got %R",
                   w.spec().DescribeOp(op).c_str(), a, arg);
      return false;
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(arg);
    PyObject** items = PySequence_Fast_ITEMS(arg);
    for (Py_ssize_t i = 0; i < n; ++i) {
      int32_t id;
      if (!ResultId(items[i], &id)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s argument %zd, item %zd must be a result of this weaver (an int), got %R",
                     w.spec().DescribeOp(op).c_str(), a, i, items[i]);
        return false;
      }
      flat->push_back(id);
    }
    counts->push_back(static_cast<int32_t>(n));
  }
  return true;
}

PyObject* CallRaggedOp(const OpCaller& c, PyObject* const* args, Py_ssize_t nargs) {
  // Reused between calls: no allocation per call once they have grown.
  static thread_local std::vector<int32_t> flat, counts;
  flat.clear();
  counts.clear();
  if (!RaggedCallArgs(*c.weaver, c.op, args, nargs, &flat, &counts)) return nullptr;
  try {
    return PyLong_FromLong(c.weaver->CallRagged(c.op, flat.data(), counts.data()));
  } catch (...) {
    SetPyErrorFromCurrent();
    return nullptr;
  }
}

PyObject* CallOp(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  auto* c = static_cast<OpCaller*>(PyCapsule_GetPointer(self, kCallerCapsule));
  if (!c) return nullptr;
  PyObject* first_or_null = nullptr;
  if (c->ragged) {
    first_or_null = CallRaggedOp(*c, args, nargs);
    if (!first_or_null || c->num_outputs == 1) return first_or_null;
    const long first = PyLong_AsLong(first_or_null);
    Py_DECREF(first_or_null);
    PyObject* list = PyList_New(c->num_outputs);
    if (!list) return nullptr;
    for (int j = 0; j < c->num_outputs; ++j) PyList_SET_ITEM(list, j, PyLong_FromLong(first + j));
    return list;
  }
  int32_t small[8];
  std::vector<int32_t> big;
  int32_t* ids = small;
  if (nargs > 8) {
    big.resize(nargs);
    ids = big.data();
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (!ResultId(args[i], &ids[i])) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "%s argument %zd must be a result of this weaver (an int), got %R",
                   c->weaver->spec().DescribeOp(c->op).c_str(), i, args[i]);
      return nullptr;
    }
  }
  int32_t first;
  try {
    first = c->weaver->Call(c->op, ids, static_cast<int>(nargs));
  } catch (...) {
    SetPyErrorFromCurrent();
    return nullptr;
  }
  if (c->num_outputs == 1) return PyLong_FromLong(first);
  PyObject* list = PyList_New(c->num_outputs);
  if (!list) return nullptr;
  for (int j = 0; j < c->num_outputs; ++j) PyList_SET_ITEM(list, j, PyLong_FromLong(first + j));
  return list;
}

PyMethodDef kCallOpDef = {"loom_op", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&CallOp)),
                          METH_FASTCALL, "Calls a loom op on weaver results; returns its result(s)."};

// ---- the fast batch_input: a builtin holding the weaver and the loom's
// {TypeShape: index} of its batch inputs (the last key looked up is
// remembered, as a weaver usually reads one batch input).
struct BatchInputCaller {
  std::shared_ptr<Weaver> weaver;
  PyObject* index;  // dict, owned
  // Rows of each batch input, by type shape index (-1: not known): a row
  // beyond them is refused when woven, so the weaver never holds it.
  std::unordered_map<int, int64_t> rows;
  PyObject* last_key = nullptr;  // borrowed from the dict's keys
  int last_ts = -1;
};
constexpr const char* kBatchInputCapsule = "treadle.loom.BatchInputCaller";

PyObject* CallBatchInput(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  auto* c = static_cast<BatchInputCaller*>(PyCapsule_GetPointer(self, kBatchInputCapsule));
  if (!c) return nullptr;
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "Weaver.batch_input takes (type_shape, batch_idx), got %zd arguments", nargs);
    return nullptr;
  }
  int ts = c->last_ts;
  if (args[0] != c->last_key) {
    PyObject* found = PyDict_GetItemWithError(c->index, args[0]);
    if (!found) {
      if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_ValueError, "Weaver.batch_input: the loom has no batch input of %R", args[0]);
      }
      return nullptr;
    }
    ts = static_cast<int>(PyLong_AsLong(found));
    // Remember the dict's own key object (alive as long as the dict).
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(c->index, &pos, &key, &value)) {
      if (value == found) c->last_key = key;
    }
    c->last_ts = ts;
  }
  PyObject* row = args[1];
  int32_t r;  // a row index has the rules of a result id: any integer, not bool
  if (!ResultId(row, &r) || r < 0) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "Weaver.batch_input: batch_idx must be a non-negative int, got %R", row);
    return nullptr;
  }
  auto known = c->rows.find(ts);
  if (known != c->rows.end() && known->second >= 0 && r >= known->second) {
    PyErr_Format(PyExc_IndexError, "batch_input: row %d is out of range for the batch input of %R, which has %lld rows",
                 static_cast<int>(r), args[0], static_cast<long long>(known->second));
    return nullptr;
  }
  try {
    return PyLong_FromLong(c->weaver->BatchInput(ts, r));
  } catch (...) {
    SetPyErrorFromCurrent();
    return nullptr;
  }
}

PyMethodDef kBatchInputDef = {
    "batch_input", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&CallBatchInput)), METH_FASTCALL,
    "batch_input(type_shape, batch_idx): a result holding row batch_idx of the loom's batch input of type_shape."};

py::object MakeBatchInputCaller(const PyWeaver& w, py::dict index, py::dict rows) {
  auto* c = new BatchInputCaller{w.weaver, index.ptr()};
  for (auto item : rows) c->rows[item.first.cast<int>()] = item.second.cast<int64_t>();
  Py_INCREF(c->index);
  PyObject* capsule = PyCapsule_New(c, kBatchInputCapsule, [](PyObject* cap) {
    auto* p = static_cast<BatchInputCaller*>(PyCapsule_GetPointer(cap, kBatchInputCapsule));
    Py_DECREF(p->index);
    delete p;
  });
  if (!capsule) {
    Py_DECREF(c->index);
    delete c;
    throw py::error_already_set();
  }
  PyObject* fn = PyCFunction_NewEx(&kBatchInputDef, capsule, nullptr);
  Py_DECREF(capsule);
  if (!fn) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(fn);
}

py::object MakeOpCaller(const PyWeaver& w, int op) {
  const LoomSpec& spec = w.weaver->spec();
  if (op < 0 || op >= spec.num_ops()) throw py::value_error("op index out of range");
  auto* c = new OpCaller{w.weaver, op, static_cast<int>(spec.ops[op].outputs.size()), spec.ops[op].has_ragged()};
  PyObject* capsule = PyCapsule_New(c, kCallerCapsule, [](PyObject* cap) {
    delete static_cast<OpCaller*>(PyCapsule_GetPointer(cap, kCallerCapsule));
  });
  if (!capsule) {
    delete c;
    throw py::error_already_set();
  }
  PyObject* fn = PyCFunction_NewEx(&kCallOpDef, capsule, nullptr);
  Py_DECREF(capsule);
  if (!fn) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(fn);
}

int32_t ToResult(py::handle h) {
  int32_t id;
  if (!ResultId(h.ptr(), &id)) {
    PyErr_Clear();
    throw py::type_error("a weaver result must be an int (a result id of this weaver), got " +
                         py::repr(h).cast<std::string>());
  }
  return id;
}

py::list ResultList(int32_t first, int n) {
  py::list out(n);
  for (int j = 0; j < n; ++j) out[j] = py::int_(first + j);
  return out;
}

const int64_t* Int64Data(const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& a, int64_t n,
                         const char* name) {
  if (a.ndim() != 1 || a.shape(0) != n) {
    throw py::value_error(StrCat("weave_trees: ", name, " must be a 1-D array of ", n, " entries"));
  }
  return a.data();
}

Tensor Schedule(PyWeaver& w) {
  if (w.schedule_version != w.weaver->version() || !w.schedule.defined()) {
    std::shared_ptr<const loom::Schedule> s = loom::Finalize(w.weaver->spec_ptr(), w.weaver->state());
    w.schedule = MakeHandleTensor(DType::kVariant, std::const_pointer_cast<loom::Schedule>(s));
    w.schedule_version = w.weaver->version();
  }
  return w.schedule;
}

py::tuple SpecToPy(const graph::TensorSpec& s) {
  return py::make_tuple(s.name, DTypeObject(s.dtype), PartialShapeToPy(s.shape));
}

struct PyScheduleReader {
  std::unique_ptr<data::RecordFileReader> reader;
};

// ---- the Weaver's slower entry points (the fast ones are the callers above)

using Int32Array = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;
using Int64Array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

void CheckOpIndex(const LoomSpec& spec, int op) {
  if (op < 0 || op >= spec.num_ops()) throw py::value_error("op index out of range");
}

// One call of `op` on a sequence of results (lists of them for ragged inputs).
py::list WeaverCall(PyWeaver& w, int op, py::sequence args) {
  const LoomSpec& spec = w.weaver->spec();
  CheckOpIndex(spec, op);
  std::vector<int32_t> ids;
  int32_t first;
  if (spec.ops[op].has_ragged()) {
    std::vector<PyObject*> items;
    for (py::handle a : args) items.push_back(a.ptr());
    std::vector<int32_t> counts;
    if (!RaggedCallArgs(*w.weaver, op, items.data(), static_cast<Py_ssize_t>(items.size()), &ids, &counts)) {
      throw py::error_already_set();
    }
    first = w.weaver->CallRagged(op, ids.data(), counts.data());
  } else {
    for (py::handle a : args) ids.push_back(ToResult(a));
    first = w.weaver->Call(op, ids.data(), static_cast<int>(ids.size()));
  }
  return ResultList(first, static_cast<int>(spec.ops[op].outputs.size()));
}

// n calls of `op`, one per row of `args` [n, inputs]; returns their results [n, outputs].
py::array_t<int32_t> WeaverCalls(PyWeaver& w, int op, Int32Array args) {
  const LoomSpec& spec = w.weaver->spec();
  CheckOpIndex(spec, op);
  const int nin = static_cast<int>(spec.ops[op].inputs.size());
  const int nout = static_cast<int>(spec.ops[op].outputs.size());
  if (args.ndim() != 2 || args.shape(1) != nin) {
    throw py::value_error(StrCat("Weaver.calls: arguments of ", spec.DescribeOp(op), " must be a 2-D array with ",
                                 nin, " columns"));
  }
  const int64_t n = args.shape(0);
  py::array_t<int32_t> out({n, static_cast<int64_t>(nout)});
  int32_t* o = out.mutable_data();
  const int32_t* a = args.data();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t first = w.weaver->Call(op, a + i * nin, nin);
    for (int j = 0; j < nout; ++j) o[i * nout + j] = first + j;
  }
  return out;
}

int64_t ConstantsCall(PyWeaver& w, int ts, py::array values, int64_t count) {
  py::buffer_info info = values.request();
  const LoomSpec& spec = w.weaver->spec();
  if (ts < 0 || ts >= spec.num_type_shapes() ||
      static_cast<size_t>(info.size * info.itemsize) != spec.type_shapes[ts].row_bytes * count) {
    throw py::value_error("Weaver.constants: the values do not fill " + std::to_string(count) + " rows");
  }
  return w.weaver->Constants(ts, info.ptr, count);
}

// The data of a 1-D array of `n` entries (any length when n < 0), for weave().
template <typename T>
const T* VectorData(const py::array_t<T, py::array::c_style | py::array::forcecast>& a, int64_t n, const char* name) {
  if (a.ndim() != 1 || (n >= 0 && a.shape(0) != n)) {
    throw py::value_error(
        StrCat("weave: ", name, " must be a 1-D array", n >= 0 ? StrCat(" of ", n, " entries") : std::string()));
  }
  return a.data();
}

// A whole graph of op calls in one call (Weaver.weave): nodes, their argument
// entries (CSR by arg_splits) and the outputs; returns each node's first result.
py::array_t<int32_t> WeaveGraph(PyWeaver& w, Int32Array node_op, Int64Array arg_splits, Int32Array arg_input,
                                Int32Array arg_source, Int64Array arg_value, Int32Array arg_output,
                                Int64Array output_node, Int32Array output_index) {
  Weaver::GraphArgs g;
  g.node_op = VectorData(node_op, -1, "node_op");
  g.num_nodes = node_op.shape(0);
  g.arg_splits = VectorData(arg_splits, g.num_nodes + 1, "arg_splits");
  g.arg_input = VectorData(arg_input, -1, "arg_input");
  const int64_t entries = arg_input.shape(0);
  if (g.arg_splits[g.num_nodes] != entries) {
    throw py::value_error(StrCat("weave: arg_splits ends at ", g.arg_splits[g.num_nodes], " but there are ", entries,
                                 " argument entries"));
  }
  g.arg_source = VectorData(arg_source, entries, "arg_source");
  g.arg_value = VectorData(arg_value, entries, "arg_value");
  g.arg_output = VectorData(arg_output, entries, "arg_output");
  g.output_node = VectorData(output_node, -1, "outputs");
  g.num_outputs = output_node.shape(0);
  g.output_index = VectorData(output_index, g.num_outputs, "output_index");
  std::vector<int32_t> first;
  {
    py::gil_scoped_release nogil;  // the arrays are held by this frame
    first = w.weaver->WeaveGraph(g);
  }
  return py::array_t<int32_t>(static_cast<py::ssize_t>(first.size()), first.data());
}

// Binary trees in bulk (Weaver.weave_trees): children by node, leaf values,
// roots; returns each root's first result.
py::array_t<int32_t> WeaveTrees(PyWeaver& w, Int64Array left, Int64Array right, Int64Array leaf_values,
                                Int64Array roots, int leaf_op, int node_op, int leaf_type_shape,
                                bool from_batch_input, std::vector<int> root_outputs) {
  if (left.ndim() != 1) throw py::value_error("weave_trees: left must be a 1-D array");
  Weaver::TreesArgs a;
  a.num_nodes = left.shape(0);
  a.left = Int64Data(left, a.num_nodes, "left");
  a.right = Int64Data(right, a.num_nodes, "right");
  a.leaf_values = Int64Data(leaf_values, a.num_nodes, "leaf_values");
  if (roots.ndim() != 1) throw py::value_error("weave_trees: roots must be a 1-D array");
  a.num_roots = roots.shape(0);
  a.roots = roots.data();
  a.leaf_op = leaf_op;
  a.node_op = node_op;
  a.leaf_type_shape = leaf_type_shape;
  a.leaf_from_batch_input = from_batch_input;
  a.root_outputs = std::move(root_outputs);
  std::vector<int32_t> first;
  {
    py::gil_scoped_release nogil;  // the arrays are held by this frame
    first = w.weaver->WeaveTrees(a);
  }
  return py::array_t<int32_t>(static_cast<py::ssize_t>(first.size()), first.data());
}

py::tuple ResultInfo(const PyWeaver& w, py::handle obj) {
  const int32_t r = ToResult(obj);
  w.weaver->Depth(r);  // range check
  const auto& s = w.weaver->state();
  return py::make_tuple(s.depth[r], s.type_shape[r], s.op[r], s.output[r], s.position[r]);
}

Tensor ScheduleHandle(std::shared_ptr<const loom::Schedule> s) {
  return MakeHandleTensor(DType::kVariant, std::const_pointer_cast<loom::Schedule>(std::move(s)));
}

// ---- registration, by job

void RegisterLoomSpec(py::module_& m) {
  py::class_<PyLoomSpec>(m, "LoomSpec", "A validated LoomMetadata: what a Weaver checks its calls against.")
      .def(py::init([](const py::bytes& metadata) {
             auto md = ParseProto<proto::LoomMetadata>(metadata, "LoomMetadata");
             return PyLoomSpec{LoomSpec::FromProto(md)};
           }),
           py::arg("metadata"))
      .def_property_readonly("fingerprint", [](const PyLoomSpec& s) { return s.spec->fingerprint; })
      .def("merge", [](const PyLoomSpec& s, const std::vector<std::string>& messages) {
             std::shared_ptr<const loom::Schedule> sched;
             {
               py::gil_scoped_release nogil;
               sched = loom::MergeMessages(s.spec, messages.data(), messages.size());
             }
             return ScheduleHandle(std::move(sched));
           },
           py::arg("messages"), "Validates and merges serialized WeaverMessages into one finalised schedule.")
      .def("merge_to_message", [](const PyLoomSpec& s, const std::vector<std::string>& messages) {
             Weaver merged(s.spec);
             for (const std::string& msg : messages) {
               merged.Append(loom::ParseWeaverMessage(*s.spec, msg.data(), msg.size()));
             }
             return py::bytes(merged.Serialize());
           },
           py::arg("messages"), "Validates and merges serialized WeaverMessages into one serialized message.");
}

void RegisterWeaver(py::module_& m) {
  py::class_<PyWeaver>(m, "LoomWeaver", py::dynamic_attr(), "The C++ Weaver; td.loom.Weaver wraps it.")
      .def(py::init([](const PyLoomSpec& s) { return PyWeaver{std::make_shared<Weaver>(s.spec)}; }),
           py::arg("spec"))
      .def("_op_caller", &MakeOpCaller, py::arg("op"))
      .def("_batch_input_caller", &MakeBatchInputCaller, py::arg("index"), py::arg("rows") = py::dict())
      .def("_call", &WeaverCall)
      .def("_calls", &WeaverCalls)
      .def("_named_tensor", [](PyWeaver& w, int index) { return w.weaver->NamedTensor(index); })
      .def("_batch_input", [](PyWeaver& w, int ts, int64_t row) { return w.weaver->BatchInput(ts, row); })
      .def("_constant", [](PyWeaver& w, int ts, py::array value) {
             py::buffer_info info = value.request();
             return w.weaver->Constant(ts, info.ptr, static_cast<size_t>(info.size * info.itemsize));
           })
      .def("_constants", &ConstantsCall)
      .def("add_output", [](PyWeaver& w, py::handle r) { w.weaver->AddOutput(ToResult(r)); }, py::arg("result"),
           "Adds `result` to the loom's outputs (of its type shape, in the order added).")
      .def("depth", [](const PyWeaver& w, py::handle r) { return w.weaver->Depth(ToResult(r)); }, py::arg("result"))
      .def_property_readonly("deepest", [](const PyWeaver& w) { return w.weaver->deepest(); },
                             "The depth of the deepest result so far.")
      .def("_type_shape_index", [](const PyWeaver& w, py::handle r) { return w.weaver->TypeShapeOf(ToResult(r)); })
      .def_property_readonly("num_results", [](const PyWeaver& w) { return w.weaver->num_results(); })
      .def("_result_info", &ResultInfo)
      .def("_outputs", [](const PyWeaver& w) { return w.weaver->state().outputs; })
      .def("serialize", [](const PyWeaver& w) { return py::bytes(w.weaver->Serialize()); },
           "The schedule as a serialized WeaverMessage.")
      .def("_append_message", [](PyWeaver& w, const py::bytes& data) {
             std::string_view view(data);
             w.weaver->Append(loom::ParseWeaverMessage(w.weaver->spec(), view.data(), view.size()));
           })
      .def("_schedule", &Schedule, "The finalised schedule (a variant tensor), cached while the weaver is unchanged.")
      .def("_weave_graph", &WeaveGraph)
      .def("_weave_trees", &WeaveTrees);
}

// The library of a loom's ops' functions, held by the td.loom.Loom: its
// eager runs find the functions there; a graph's runs find them in the
// graph's own library.
struct PyLoomLibrary {
  std::shared_ptr<const graph::FunctionLibrary> library;
};

py::list PreparedAttrNames(const PyPreparedAttrs& p) {
  py::list names;
  for (const auto& item : p.attrs.items()) names.append(py::str(item.first));
  return names;
}

// The runtime's checks and facts.
void RegisterLoomRuntime(py::module_& m) {
  py::class_<PyLoomLibrary>(m, "LoomLibrary", "The library of a loom's ops' functions, for its eager runs.")
      .def(py::init([](const std::vector<PyLibraryFunction>& functions) {
             auto fns = LibraryFromPy(functions);
             py::gil_scoped_release nogil;
             return PyLoomLibrary{graph::FunctionLibrary::Build(fns)};
           }),
           py::arg("functions"), "The library of traced functions (_core.LibraryFunction, callers and callees).")
      .def_static("from_graph_def", [](const py::bytes& data) {
             std::string_view view(data);
             py::gil_scoped_release nogil;
             return PyLoomLibrary{graph::LoadGraphDef(view.data(), view.size()).library};
           },
           py::arg("graph_def"), "The library of a serialized GraphDef (a loaded loom's), validated.")
      .def("check", [](const PyLoomLibrary& l, const py::bytes& metadata) {
             auto md = ParseProto<proto::LoomMetadata>(metadata, "LoomMetadata");
             std::shared_ptr<const loom::LoomRuntime> rt;
             {
               py::gil_scoped_release nogil;
               rt = loom::BuildRuntime(md, l.library);
               loom::RegisterEagerLibrary(md, l.library);
             }
             py::list captures;
             for (const auto& s : rt->capture_specs()) captures.append(SpecToPy(s));
             return captures;
           },
           py::arg("metadata"), "Builds and validates the runtime of a serialized LoomMetadata over this "
                                "library, which eager runs of that loom's ops then use; returns its capture specs.")
      .def("executable", [](const PyLoomLibrary& l, const std::string& name) {
             const int f = l.library->Find(name);
             if (f < 0) throw Error(Code::kNotFound, StrCat("the loom's library has no function '", name, "'"));
             // Shares ownership of the library, which owns the function's Executable.
             return PyExecutable{std::shared_ptr<const graph::Executable>(l.library, &l.library->Compiled(f))};
           },
           py::arg("name"), "The Executable of library function `name` (for eager calls of a loaded loom's ops).")
      .def("functions", [](const PyLoomLibrary& l) {
             std::vector<PyLibraryFunction> out;
             for (int i = 0; i < l.library->size(); ++i) out.push_back(PyLibraryFunction{l.library->Function(i)});
             return out;
           },
           "Every function of the library, to join the library of a graph that runs the loom's ops.");
  py::class_<PyPreparedAttrs>(m, "PreparedAttrs", "An op's attrs, converted once (a mapping of their values).")
      .def(py::init([](const OpHandle& h, py::handle attrs) { return PyPreparedAttrs{h.op, AttrsFromPy(*h.op, attrs)}; }),
           py::arg("op"), py::arg("attrs"))
      .def("__getitem__", [](const PyPreparedAttrs& p, const std::string& name) {
             const AttrValue* v = p.attrs.Find(name);
             if (!v) throw py::key_error(name);
             return AttrToPy(*v);
           })
      .def("__contains__", [](const PyPreparedAttrs& p, const std::string& name) { return p.attrs.Find(name) != nullptr; })
      .def("__len__", [](const PyPreparedAttrs& p) { return p.attrs.items().size(); })
      .def("keys", &PreparedAttrNames)
      .def("__iter__", [](const PyPreparedAttrs& p) { return py::iter(PreparedAttrNames(p)); });
  m.def("loom_node_attrs", [](const py::bytes& metadata) {
    auto md = ParseProto<proto::LoomMetadata>(metadata, "LoomMetadata");
    AttrMap attrs;
    loom::MetadataToAttrs(md, &attrs);
    py::dict out;
    for (const auto& [name, value] : attrs.items()) out[py::str(name)] = AttrToPy(value);
    return out;
  }, py::arg("metadata"), "The attrs describing a loom (its LoomMetadata, function names included) on the Loom ops.");
  m.def("loom_body_fingerprint", [](const py::bytes& library, const std::string& name) {
    auto lib = ParseProto<proto::GraphDef>(library, "GraphDef");
    return loom::FunctionBodyFingerprint(lib.library(), name);
  }, py::arg("library"), py::arg("name"),
        "The fingerprint of what function `name` of a serialized GraphDef's library computes (LoomOpDef.body_fingerprint).");
  m.def("loom_function_fingerprint", [](const std::vector<PyLibraryFunction>& functions, const std::string& name) {
    proto::GraphDef written;
    graph::WriteLibraryGraphDef(LibraryFromPy(functions), &written);
    return loom::FunctionBodyFingerprint(written.library(), name);
  }, py::arg("functions"), py::arg("name"),
        "The fingerprint of what function `name` of traced functions (LibraryFunctions, its callees included) "
        "computes (LoomOpDef.body_fingerprint), with no serialization through Python.");
  m.def("loom_schedule_depth", [](const Tensor& schedule) {
    return GetHandle<loom::Schedule>(schedule, DType::kVariant, "Loom schedule")->num_depths;
  }, py::arg("schedule"), "The deepest layer of a finalised schedule (a variant tensor).");
}

py::object ReadScheduleBatch(PyScheduleReader& r, const PyLoomSpec& spec, int64_t max_count) {
  std::shared_ptr<const loom::Schedule> sched;
  int64_t n = 0;
  {
    py::gil_scoped_release nogil;
    std::vector<std::string> msgs;
    std::string rec;
    while (n < max_count && r.reader->Next(&rec)) {
      msgs.push_back(std::move(rec));
      ++n;
    }
    if (n > 0) sched = loom::MergeMessages(spec.spec, msgs.data(), msgs.size());
  }
  if (n == 0) return py::none();
  return py::make_tuple(ScheduleHandle(std::move(sched)), n);
}

// Record files: TFRecord-format schedules and their checksums.
void RegisterRecordFiles(py::module_& m) {
  m.def("crc32c", [](const py::bytes& data, uint32_t crc) {
    std::string_view v(data);
    return loom::Crc32c(v.data(), v.size(), crc);
  }, py::arg("data"), py::arg("crc") = 0);
  m.def("write_records", [](const std::string& path, const std::vector<std::string>& records) {
    py::gil_scoped_release nogil;
    data::WriteRecordFile(path, records, data::Compression::kNone);
  }, py::arg("path"), py::arg("records"), "Writes records in the TFRecord format.");
  m.def("read_records", [](const std::string& path) {
    std::vector<std::string> records;
    {
      py::gil_scoped_release nogil;
      data::RecordFileReader reader(path, data::Compression::kNone);
      std::string record;
      while (reader.Next(&record)) records.push_back(std::move(record));
    }
    py::list out;
    for (const std::string& r : records) out.append(py::bytes(r));
    return out;
  }, py::arg("path"), "Reads every record of a TFRecord file (checksums verified).");
  py::class_<PyScheduleReader>(m, "LoomScheduleReader", "Reads schedule records and merges them in batches.")
      .def(py::init([](const std::string& path) {
             return PyScheduleReader{std::make_unique<data::RecordFileReader>(path, data::Compression::kNone)};
           }),
           py::arg("path"))
      .def("read_batch", &ReadScheduleBatch, py::arg("spec"), py::arg("max_count"),
           "Up to max_count records merged into one schedule: (schedule tensor, count), or None at the end.")
      .def_property_readonly("records_read", [](const PyScheduleReader& r) { return r.reader->records_read(); })
      .def_property_readonly("offset", [](const PyScheduleReader& r) { return r.reader->offset(); });
}

}  // namespace

void RegisterLoom(py::module_& m) {
  RegisterLoomSpec(m);
  RegisterWeaver(m);
  RegisterLoomRuntime(m);
  RegisterRecordFiles(m);
}

}  // namespace treadle::python
