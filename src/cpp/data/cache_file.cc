// Dataset.cache(filename): TensorFlow's file cache.
//
// The first iteration that finds no complete cache writes one while it hands
// out its input's elements; later iterations, of this dataset or of any other
// with the same filename, read it instead of their input. The files:
//   <filename>.lockfile  held by the iteration writing the cache (created
//                        exclusively: a second writer gets AlreadyExists, as
//                        in TensorFlow), removed when it ends;
//   <filename>.data      one record per element (record_file.h framing with
//                        its checksums): per component, its TensorProto's
//                        length (8 bytes, little-endian) and bytes;
//   <filename>.index     written last, when the input has ended: the element
//                        count and the components' dtypes.
// A cache is complete only with its index, so an iteration that stops early
// (or fails) leaves nothing that reads as a cache: its unfinished data file
// and its lockfile are removed. Reading checks the index against the dataset
// and against the data (a truncated or corrupt file is DataLoss), and each
// element it reads against the dataset's element_spec: a cache written by a
// dataset whose elements have the same dtypes but other shapes is refused
// (InvalidArgument, as TensorFlow's iterator refuses an element whose shape
// contradicts its output shapes), never handed out.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <utility>

#include "data/pipeline.h"
#include "tensor/tensor_proto.h"
#include "util/errors.h"
#include "util/paths.h"

namespace treadle::data {

namespace {

constexpr char kIndexMagic[] = "treadle-cache v1";
// TensorFlow's ALREADY_EXISTS status (td.errors.AlreadyExistsError, code 6).
// Only this reader raises it, so it is named here rather than in errors.h,
// which every source of the core includes.
constexpr Code kAlreadyExists = static_cast<Code>(6);

std::string DTypesString(const std::vector<DType>& dtypes) {
  std::string s = "(";
  for (size_t i = 0; i < dtypes.size(); ++i) s += (i ? ", " : "") + std::string(DTypeName(dtypes[i]));
  return s + ")";
}

std::string EncodeElement(const Element& e) {
  std::string out;
  for (const Tensor& t : e) {
    proto::TensorProto p;
    TensorToProto(t, &p);
    const std::string bytes = p.SerializeAsString();
    const uint64_t n = bytes.size();
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(n >> (8 * i)));
    out += bytes;
  }
  return out;
}

Element DecodeElement(const std::string& record, size_t components, const std::string& where) {
  Element out;
  size_t at = 0;
  for (size_t c = 0; c < components; ++c) {
    if (record.size() - at < 8) throw Error(Code::kDataLoss, StrCat(where, ": component ", c, " is cut short"));
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(record[at + i])) << (8 * i);
    at += 8;
    if (n > record.size() - at) {
      throw Error(Code::kDataLoss, StrCat(where, ": component ", c, " claims ", n, " bytes, only ",
                                          record.size() - at, " remain"));
    }
    proto::TensorProto p;
    if (!p.ParseFromArray(record.data() + at, static_cast<int>(n))) {
      throw Error(Code::kDataLoss, StrCat(where, ": component ", c, " is not a valid TensorProto"));
    }
    at += n;
    out.push_back(TensorFromProto(p, StrCat(where, ", component ", c)));
  }
  if (at != record.size()) throw Error(Code::kDataLoss, StrCat(where, ": ", record.size() - at, " bytes too many"));
  return out;
}

struct Index {
  uint64_t count = 0;
  std::vector<DType> dtypes;
};

std::string EncodeIndex(const Index& index) {
  std::ostringstream s;
  s << kIndexMagic << "\n" << index.count << "\n";
  for (DType d : index.dtypes) s << DTypeName(d) << " ";
  return s.str();
}

Index ReadIndex(const std::string& path) {
  RecordFileReader reader(path, Compression::kNone);
  std::string record, extra;
  if (!reader.Next(&record) || reader.Next(&extra)) {
    throw Error(Code::kDataLoss, StrCat(path, ": not a cache index (it must hold one record)"));
  }
  std::istringstream s(record);
  std::string magic;
  Index index;
  if (!std::getline(s, magic) || magic != kIndexMagic || !(s >> index.count)) {
    throw Error(Code::kDataLoss, StrCat(path, ": not a treadle cache index"));
  }
  std::string name;
  while (s >> name) {
    const DType d = DTypeFromName(name);
    if (d == DType::kInvalid || IsHandle(d)) {
      throw Error(Code::kDataLoss, StrCat(path, ": the index names an unknown dtype '", name, "'"));
    }
    index.dtypes.push_back(d);
  }
  if (!s.eof()) throw Error(Code::kDataLoss, StrCat(path, ": the index's dtypes are unreadable"));
  return index;
}

bool Exists(const std::string& path) { return access(CheckedPath(path).c_str(), F_OK) == 0; }

class CacheFileDef;

// The dataset's element_spec, flattened: what every element read must be.
struct ComponentSpecs {
  std::vector<DType> dtypes;
  std::vector<PartialShape> shapes;
};

// Reads a complete cache.
class CacheReadIt : public Stage {
 public:
  CacheReadIt(const std::string& prefix, const ComponentSpecs& spec)
      : prefix_(prefix), data_path_(prefix + ".data"), index_(ReadIndex(prefix + ".index")),
        reader_(data_path_, Compression::kNone), spec_(spec) {
    const std::vector<DType>& expected = spec.dtypes;
    if (index_.dtypes != expected) {
      ThrowInvalidArgument("cache: the cache at '", prefix, "' holds elements of dtypes ", DTypesString(index_.dtypes),
                           " but this dataset's elements are ", DTypesString(expected),
                           "; use another filename, or delete the cache's files");
    }
  }
  bool Next(Element* out) override {
    std::string record;
    if (!reader_.Next(&record)) {
      if (reader_.records_read() != index_.count) {
        throw Error(Code::kDataLoss, StrCat(data_path_, ": the cache holds ", reader_.records_read(),
                                            " elements, but its index says ", index_.count, " (truncated)"));
      }
      return false;
    }
    if (reader_.records_read() > index_.count) {
      throw Error(Code::kDataLoss, StrCat(data_path_, ": the cache holds more elements than its index's ",
                                          index_.count));
    }
    *out = DecodeElement(record, index_.dtypes.size(),
                         StrCat(data_path_, ": element ", reader_.records_read() - 1));
    for (size_t c = 0; c < out->size(); ++c) {
      if ((*out)[c].dtype() != index_.dtypes[c]) {
        throw Error(Code::kDataLoss, StrCat(data_path_, ": element ", reader_.records_read() - 1, " component ", c,
                                            " is ", DTypeName((*out)[c].dtype()), ", not ",
                                            DTypeName(index_.dtypes[c])));
      }
      if (!spec_.shapes[c].IsCompatibleWith((*out)[c].shape())) {
        ThrowInvalidArgument("cache: element ", reader_.records_read() - 1, " of the cache at '", prefix_,
                             "' has a component ", c, " of shape ", DimsToString((*out)[c].shape()),
                             ", but this dataset's elements have shape ", spec_.shapes[c].ToString(),
                             "; use another filename, or delete the cache's files");
      }
    }
    return true;
  }

 private:
  std::string prefix_;
  std::string data_path_;
  Index index_;
  RecordFileReader reader_;
  const ComponentSpecs& spec_;  // owned by the CacheFileDef, which the iteration keeps alive
};

// Passes its input's elements on, writing them; the cache is finished (index
// written, files renamed) when the input ends.
class CacheWriteIt : public Stage {
 public:
  CacheWriteIt(std::unique_ptr<Stage> input, const std::string& prefix, const std::vector<DType>& dtypes)
      : input_(std::move(input)), prefix_(prefix), dtypes_(dtypes) {
    const std::string lock = prefix_ + ".lockfile";
    const int fd = open(CheckedPath(lock).c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0 && errno == EEXIST) {
      throw Error(kAlreadyExists,
                  StrCat("There appears to be a concurrent caching iterator running - cache lockfile already exists ('",
                         lock, "'). If you are sure no other running computation is using this cache prefix, delete "
                         "the lockfile and re-initialize the iterator."));
    }
    if (fd < 0) throw Error(Code::kNotFound, StrCat(lock, ": cannot create the cache's lockfile: ", std::strerror(errno)));
    const std::string pid = StrCat(getpid(), "\n");
    (void)!write(fd, pid.data(), pid.size());
    close(fd);
    locked_ = true;
    try {
      writer_ = std::make_unique<RecordFileWriter>(TempPath(), Compression::kNone);
    } catch (...) {
      Unlock();
      throw;
    }
  }
  ~CacheWriteIt() override {
    if (writer_) {  // not finished: leave nothing that could read as a cache
      writer_.reset();
      std::remove(TempPath().c_str());
    }
    Unlock();
  }

  bool Next(Element* out) override {
    if (!writer_) return false;
    if (!input_->Next(out)) {
      Finish();
      return false;
    }
    if (out->size() != dtypes_.size()) {
      ThrowInvalidArgument("cache: an element has ", out->size(), " components, the dataset's spec ", dtypes_.size());
    }
    writer_->Write(EncodeElement(*out));
    ++count_;
    return true;
  }

 private:
  std::string TempPath() const { return prefix_ + ".data.tmp"; }

  void Finish() {
    writer_->Close();
    writer_.reset();
    const std::string index_tmp = prefix_ + ".index.tmp";
    WriteRecordFile(index_tmp, {EncodeIndex(Index{count_, dtypes_})}, Compression::kNone);
    if (std::rename(TempPath().c_str(), (prefix_ + ".data").c_str()) != 0 ||
        std::rename(index_tmp.c_str(), (prefix_ + ".index").c_str()) != 0) {
      throw Error(Code::kDataLoss, StrCat(prefix_, ": cannot finish the cache: ", std::strerror(errno)));
    }
    Unlock();
  }

  void Unlock() {
    if (locked_) std::remove((prefix_ + ".lockfile").c_str());
    locked_ = false;
  }

  std::unique_ptr<Stage> input_;
  std::string prefix_;
  std::vector<DType> dtypes_;
  std::unique_ptr<RecordFileWriter> writer_;
  uint64_t count_ = 0;
  bool locked_ = false;
};

// Chooses at its first element whether to read or write: a cache another
// iteration finished meanwhile is read.
class CacheIt : public Stage {
 public:
  CacheIt(std::shared_ptr<const StageDef> def, StageDefPtr input, const std::string* prefix,
          const ComponentSpecs* spec)
      : def_(std::move(def)), input_(std::move(input)), prefix_(prefix), spec_(spec) {}
  bool Next(Element* out) override {
    if (!inner_) {
      if (Exists(*prefix_ + ".index")) {
        inner_ = std::make_unique<CacheReadIt>(*prefix_, *spec_);
      } else {
        inner_ = std::make_unique<CacheWriteIt>(input_->MakeIterator(), *prefix_, spec_->dtypes);
      }
    }
    return inner_->Next(out);
  }

 private:
  std::shared_ptr<const StageDef> def_;  // owns *prefix_ and *spec_
  StageDefPtr input_;
  const std::string* prefix_;
  const ComponentSpecs* spec_;
  std::unique_ptr<Stage> inner_;
};

class CacheFileDef : public StageDef {
 public:
  CacheFileDef(StageDefPtr input, std::string prefix, ComponentSpecs spec)
      : input_(std::move(input)), prefix_(std::move(prefix)), spec_(std::move(spec)) {
    CheckedPath(prefix_);
    if (spec_.shapes.size() != spec_.dtypes.size()) {
      ThrowInvalidArgument("cache: ", spec_.dtypes.size(), " component dtypes but ", spec_.shapes.size(),
                           " component shapes");
    }
  }
  std::unique_ptr<Stage> MakeIterator() const override {
    return std::make_unique<CacheIt>(shared_from_this(), input_, &prefix_, &spec_);
  }

 private:
  StageDefPtr input_;
  std::string prefix_;
  ComponentSpecs spec_;
};

}  // namespace

StageDefPtr CacheFile(StageDefPtr input, std::string filename, std::vector<DType> dtypes,
                      std::vector<PartialShape> shapes) {
  return std::make_shared<CacheFileDef>(std::move(input), std::move(filename),
                                        ComponentSpecs{std::move(dtypes), std::move(shapes)});
}

}  // namespace treadle::data
