// td.data's record files as Python sees them: a reader that hands out records
// as string scalars in batches, reading and decompressing with the GIL released.
#include "data/pipeline.h"
#include "data/record_file.h"
#include "data/waiting.h"
#include "py_common.h"
#include "util/cancel.h"

#include <exception>
#include <thread>
#include <utility>

namespace treadle::python {

namespace {

struct PyRecordFileReader {
  std::unique_ptr<data::RecordFileReader> reader;
  // An error met after some records of a chunk: those records are handed
  // out first and the error is raised by the next read, at its own record.
  std::exception_ptr pending;
};

// A stage whose elements come from a Python iterator of lists of EagerTensors
// (td.data's stages written in Python). It takes the GIL for each element.
class PyIteratorStage : public data::Stage {
 public:
  explicit PyIteratorStage(py::object it) : it_(new py::object(std::move(it))) {}
  ~PyIteratorStage() override {
    GilForDrop gil;
    if (gil.held()) delete it_;
  }
  bool Next(data::Element* out) override {
    GilForCall gil;
    py::object item = py::reinterpret_steal<py::object>(PyIter_Next(it_->ptr()));
    if (!item) {
      if (PyErr_Occurred()) throw py::error_already_set();
      return false;
    }
    out->clear();
    for (py::handle t : item) out->push_back(t.cast<const Tensor&>());
    return true;
  }

 private:
  py::object* it_;  // deleted with the GIL held, whichever thread ends the stage
};

struct PyStage {
  data::StageDefPtr def;
};

// A Python object shared by a pipeline's description, which whichever thread
// ends the pipeline drops: the GIL is taken for its deletion.
std::shared_ptr<py::object> SharedPyObject(py::object o) {
  return std::shared_ptr<py::object>(new py::object(std::move(o)), [](py::object* p) {
    GilForDrop gil;
    if (gil.held()) delete p;
  });
}

// An iteration of a pipeline. Destroying it may join a prefetch thread that
// needs the GIL to finish a Python stage, so the GIL is released meanwhile.
// Python frees it on whichever thread drops the last reference, which may be
// one of the pipeline's own threads (running a Python source when a
// collection frees the iterator): joining there would join that thread
// itself, so the pipeline is then ended on a thread of its own.
struct PyPipelineIterator {
  std::unique_ptr<data::Stage> stage;
  ~PyPipelineIterator() {
    if (!stage) return;
    if (data::on_stage_thread) {
      std::thread([ending = std::move(stage)]() mutable { ending.reset(); }).detach();
    } else if (PyGILState_Check()) {
      py::gil_scoped_release nogil;
      stage.reset();
    }
  }
};

std::vector<Tensor> TensorsFromPy(const py::list& items, const char* what) {
  std::vector<Tensor> out;
  for (py::handle t : items) {
    if (!py::isinstance<Tensor>(t)) throw py::type_error(std::string(what) + " must be EagerTensors");
    out.push_back(t.cast<const Tensor&>());
  }
  return out;
}

PyStage FunctionStage(const PyStage& input, const PyExecutable& fn, const py::list& captures, bool filter) {
  std::vector<Tensor> caps = TensorsFromPy(captures, "captures");
  return {filter ? data::Filter(input.def, fn.executable, std::move(caps))
                 : data::Map(input.def, fn.executable, std::move(caps))};
}

}  // namespace

void RegisterData(py::module_& m) {
  py::class_<PyStage>(m, "DataStage", "A td.data pipeline stage run in C++ (its description; iterator() runs it).")
      .def("iterator", [](const PyStage& s) {
             cancel::InstallInterruptHook();  // in front of the program's SIGINT handler, so Ctrl-C reaches the waits
             std::unique_ptr<data::Stage> stage;
             {
               // Without the GIL: a stage that fails to build destroys the
               // stages built below it, and a prefetch among them joins its
               // thread, which may be waiting for the GIL to run a Python
               // source. (Python stages take the GIL when they need it.)
               py::gil_scoped_release nogil;
               stage = s.def->MakeIterator();
             }
             return std::unique_ptr<PyPipelineIterator>(new PyPipelineIterator{std::move(stage)});
           }, "A fresh iteration of the pipeline.");
  py::class_<PyPipelineIterator>(m, "DataIterator")
      .def("next", [](PyPipelineIterator& it) -> py::object {
             data::Element e;
             bool more;
             cancel::CallScope scope;  // Ctrl-C and the caller's deadline end the wait (data/waiting.h)
             {
               py::gil_scoped_release nogil;
               more = it.stage->Next(&e);
             }
             if (!more) return py::none();
             py::list out(e.size());
             for (size_t i = 0; i < e.size(); ++i) out[i] = py::cast(std::move(e[i]));
             return std::move(out);
           }, "The next element as a list of EagerTensors (the GIL released meanwhile); None at the end.");
  m.def("data_slices", [](const py::list& components) {
    return PyStage{data::TensorSlices(TensorsFromPy(components, "components"))};
  });
  m.def("data_range", [](int64_t start, int64_t stop, int64_t step, py::handle dtype) {
    return PyStage{data::Range(start, stop, step, DTypeFromPy(dtype))};
  });
  m.def("data_records", [](const std::vector<std::string>& paths, const std::string& compression) {
    return PyStage{data::RecordFiles(paths, data::ParseCompression(compression))};
  });
  m.def("data_python", [](py::function make_iterator) {
    std::shared_ptr<py::object> factory = SharedPyObject(std::move(make_iterator));
    return PyStage{data::ExternalSource([factory]() -> std::unique_ptr<data::Stage> {
      GilForCall gil;
      return std::make_unique<PyIteratorStage>(py::iter((*factory)()));
    })};
  }, "A stage whose elements come from iter(make_iterator()), lists of EagerTensors.");
  m.def("data_map", [](const PyStage& in, const PyExecutable& fn, const py::list& caps) {
    return FunctionStage(in, fn, caps, false);
  });
  m.def("data_filter", [](const PyStage& in, const PyExecutable& fn, const py::list& caps) {
    return FunctionStage(in, fn, caps, true);
  });
  m.def("data_parallel_map", [](const PyStage& in, const PyExecutable& fn, const py::list& caps, int threads,
                                bool deterministic) {
    return PyStage{data::ParallelMap(in.def, fn.executable, TensorsFromPy(caps, "captures"), threads, deterministic)};
  });
  m.def("data_batch", [](const PyStage& in, int64_t size, bool drop) { return PyStage{data::Batch(in.def, size, drop)}; });
  m.def("data_take", [](const PyStage& in, int64_t n) { return PyStage{data::Take(in.def, n)}; });
  m.def("data_unbatch", [](const PyStage& in) { return PyStage{data::Unbatch(in.def)}; });
  m.def("data_skip", [](const PyStage& in, int64_t n) { return PyStage{data::Skip(in.def, n)}; });
  m.def("data_shuffle", [](const PyStage& in, int64_t size, uint64_t seed, uint64_t seed2, bool reshuffle) {
    return PyStage{data::Shuffle(in.def, size, seed, seed2, reshuffle)};
  });
  m.def("data_repeat", [](const PyStage& in, int64_t n) { return PyStage{data::Repeat(in.def, n)}; });
  m.def("data_prefetch", [](const PyStage& in, int64_t n) { return PyStage{data::Prefetch(in.def, n)}; });
  m.def("data_parallel_batch", [](const PyStage& in, int64_t size, bool drop, int threads, bool deterministic) {
    return PyStage{data::ParallelBatch(in.def, size, drop, threads, deterministic)};
  });
  m.attr("data_max_interleave_cycle") = data::kMaxInterleaveCycle;
  m.def("data_interleave", [](const PyStage& in, py::function make_stage, int64_t cycle, int64_t block, int threads,
                              bool deterministic) {
    std::shared_ptr<py::object> make = SharedPyObject(std::move(make_stage));
    data::DatasetFactory factory = [make](data::Element e) -> data::StageDefPtr {
      GilForCall gil;
      py::list items(e.size());
      for (size_t i = 0; i < e.size(); ++i) items[i] = py::cast(std::move(e[i]));
      py::object stage;
      try {
        stage = (*make)(items);
      } catch (...) {
        // A forced unwind (no C++ exception object, util/thread_errors.h):
        // the thread ends without the GIL, so no reference may be dropped on the way out.
        if (!std::current_exception()) items.release();
        throw;
      }
      if (!py::isinstance<PyStage>(stage)) throw py::type_error("interleave: the dataset factory must return a DataStage");
      return stage.cast<const PyStage&>().def;
    };
    return PyStage{data::Interleave(in.def, std::move(factory), cycle, block, threads, deterministic)};
  }, "interleave: make_stage(list of EagerTensors) -> DataStage of an input element's dataset (called with the GIL).");
  m.def("data_cache_file", [](const PyStage& in, const std::string& filename, const py::list& dtypes,
                              const py::list& shapes) {
    std::vector<DType> ds;
    for (py::handle d : dtypes) ds.push_back(DTypeFromPy(d));
    std::vector<PartialShape> ss;
    for (py::handle s : shapes) ss.push_back(PartialShapeFromPy(s));
    return PyStage{data::CacheFile(in.def, filename, std::move(ds), std::move(ss))};
  }, "cache(filename): data_cache_file(input, filename, component dtypes, component shapes (None or dims, "
     "None for an unknown dimension)).");

  py::class_<PyRecordFileReader>(m, "RecordFileReader",
                                 "Reads a TFRecord file (optionally GZIP or ZLIB compressed), checking every record.")
      .def(py::init([](const std::string& path, const std::string& compression) {
             data::Compression c = data::ParseCompression(compression);
             py::gil_scoped_release nogil;
             return PyRecordFileReader{std::make_unique<data::RecordFileReader>(path, c)};
           }),
           py::arg("path"), py::arg("compression_type") = "")
      .def("read", [](PyRecordFileReader& r, int64_t max_count) {
             if (r.pending) std::rethrow_exception(std::exchange(r.pending, nullptr));
             std::vector<Tensor> records;
             {
               py::gil_scoped_release nogil;
               std::string rec;
               try {
                 while (static_cast<int64_t>(records.size()) < max_count && r.reader->Next(&rec)) {
                   records.push_back(Tensor::Scalar<std::string>(std::move(rec)));
                 }
               } catch (...) {
                 if (records.empty()) throw;
                 r.pending = std::current_exception();
               }
             }
             py::list out(records.size());
             for (size_t i = 0; i < records.size(); ++i) out[i] = py::cast(std::move(records[i]));
             return out;
           },
           py::arg("max_count"), "Up to max_count records as string scalar tensors; an empty list at the end.")
      .def_property_readonly("records_read", [](const PyRecordFileReader& r) { return r.reader->records_read(); });
  m.def("write_record_file", [](const std::string& path, const std::vector<std::string>& records,
                                const std::string& compression) {
    data::Compression c = data::ParseCompression(compression);
    py::gil_scoped_release nogil;
    data::WriteRecordFile(path, records, c);
  }, py::arg("path"), py::arg("records"), py::arg("compression_type") = "",
     "Writes records as a TFRecord file, compressed as asked ('', 'GZIP' or 'ZLIB').");
}

}  // namespace treadle::python
