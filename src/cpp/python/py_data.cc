// td.data's record files as Python sees them: a reader that hands out records
// as string scalars in batches, reading and decompressing with the GIL released.
#include "data/record_file.h"
#include "py_common.h"

#include <exception>
#include <utility>

namespace treadle::python {

namespace {

struct PyRecordFileReader {
  std::unique_ptr<data::RecordFileReader> reader;
  // An error met after some records of a chunk: those records are handed
  // out first and the error is raised by the next read, at its own record.
  std::exception_ptr pending;
};

}  // namespace

void RegisterData(py::module_& m) {
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
