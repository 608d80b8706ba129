#include "data/record_file.h"

#include <sys/stat.h>

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "loom/record_io.h"
#include "util/errors.h"
#include "util/paths.h"

namespace treadle::data {

namespace {

constexpr size_t kChunk = 1 << 16;
constexpr int kWindowBits = 15;  // zlib's MAX_WBITS; +16 selects the GZIP wrapper

uint32_t Load32(const unsigned char* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint64_t Load64(const unsigned char* p) { return uint64_t(Load32(p)) | uint64_t(Load32(p + 4)) << 32; }
void Store32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void Store64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

int WindowBits(Compression c) { return c == Compression::kGzip ? kWindowBits + 16 : kWindowBits; }

std::FILE* Open(const std::string& path, const char* mode) {
  std::FILE* f = std::fopen(CheckedPath(path).c_str(), mode);
  if (!f) throw Error(Code::kNotFound, StrCat(path, ": cannot open: ", std::strerror(errno)));
  return f;
}

class PlainSource : public ByteSource {
 public:
  explicit PlainSource(std::FILE* f) : file_(f) {
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) size_ = st.st_size;
  }
  ~PlainSource() override { std::fclose(file_); }
  size_t Read(void* out, size_t n) override {
    const size_t got = std::fread(out, 1, n, file_);
    position_ += static_cast<int64_t>(got);
    return got;
  }
  int64_t Remaining() const override { return size_ < 0 ? -1 : std::max<int64_t>(size_ - position_, 0); }

 private:
  std::FILE* file_;
  int64_t size_ = -1, position_ = 0;
};

// Inflates a GZIP or ZLIB stream. Running out of input before the stream's
// end is a truncated file, not a clean end. A GZIP file may hold several
// members one after another (`cat a.gz b.gz`, pigz, gzip's append mode): they
// are read in turn, as gzip itself does. A ZLIB stream is one stream: bytes
// after its end are an error, never ignored.
class InflateSource : public ByteSource {
 public:
  InflateSource(std::FILE* f, const std::string& path, Compression c) : file_(f), path_(path), compression_(c) {
    std::memset(&z_, 0, sizeof(z_));
    if (inflateInit2(&z_, WindowBits(c)) != Z_OK) {
      std::fclose(file_);
      throw Error(Code::kInternal, StrCat(path, ": zlib could not start inflating"));
    }
    in_.resize(kChunk);
  }
  ~InflateSource() override {
    inflateEnd(&z_);
    std::fclose(file_);
  }

  size_t Read(void* out, size_t n) override {
    z_.next_out = static_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(n);
    while (z_.avail_out > 0 && !done_) {
      if (z_.avail_in == 0 && !Refill()) {
        if (total_in_ == 0) {  // an empty file holds no records
          done_ = true;
          break;
        }
        throw Error(Code::kDataLoss, StrCat(path_, ": truncated ", CompressionName(compression_),
                                            " stream (the file ends inside the compressed data)"));
      }
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        EndOfStream();
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        throw Error(Code::kDataLoss, StrCat(path_, ": not valid ", CompressionName(compression_), " data",
                                            members_ > 0 ? StrCat(" in the bytes after GZIP member ", members_,
                                                                  " (from byte offset ", member_start_,
                                                                  ": not another GZIP member)")
                                                         : std::string(),
                                            " (zlib: ", z_.msg ? z_.msg : "error", ")"));
      }
    }
    return n - z_.avail_out;
  }

 private:
  // More compressed bytes from the file; false at its end.
  bool Refill() {
    const size_t got = std::fread(in_.data(), 1, in_.size(), file_);
    if (got == 0) return false;
    total_in_ += got;
    z_.next_in = in_.data();
    z_.avail_in = static_cast<uInt>(got);
    return true;
  }

  // A stream (a GZIP member) ended: the file's end, the next GZIP member, or,
  // after a ZLIB stream, bytes that belong to nothing.
  void EndOfStream() {
    ++members_;
    if (z_.avail_in == 0 && !Refill()) {
      done_ = true;
      return;
    }
    const uint64_t offset = total_in_ - z_.avail_in;
    if (compression_ != Compression::kGzip) {
      throw Error(Code::kDataLoss, StrCat(path_, ": unexpected bytes after the end of the ", CompressionName(compression_),
                                          " stream, from byte offset ", offset, " (the file is damaged, or holds "
                                          "more than the one compressed stream)"));
    }
    member_start_ = offset;
    if (inflateReset(&z_) != Z_OK) throw Error(Code::kInternal, StrCat(path_, ": zlib could not restart inflating"));
  }

  std::FILE* file_;
  std::string path_;
  Compression compression_;
  z_stream z_;
  std::vector<Bytef> in_;
  uint64_t total_in_ = 0;
  uint64_t member_start_ = 0;  // where the current GZIP member starts in the file
  int64_t members_ = 0;        // streams (GZIP members) read to their end
  bool done_ = false;
};

// What a file's first bytes look like: a TFRecord header whose checksum
// matches, a GZIP member, a ZLIB stream; kNone with `known` false otherwise.
struct Guess {
  Compression compression = Compression::kNone;
  bool known = false;
};

Guess GuessCompression(const unsigned char* b, size_t n) {
  if (n >= 12 && loom::MaskCrc(loom::Crc32c(b, 8)) == Load32(b + 8)) return {Compression::kNone, true};
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return {Compression::kGzip, true};
  if (n >= 2 && (b[0] & 0x0f) == 8 && (b[0] >> 4) <= 7 && ((b[0] << 8) | b[1]) % 31 == 0) {
    return {Compression::kZlib, true};
  }
  return {};
}

std::string TypeArg(Compression c) {
  return c == Compression::kNone ? "compression_type=None" : StrCat("compression_type='", CompressionName(c), "'");
}

}  // namespace

Compression ParseCompression(const std::string& name) {
  if (name.empty() || name == "NONE") return Compression::kNone;
  if (name == "GZIP") return Compression::kGzip;
  if (name == "ZLIB") return Compression::kZlib;
  ThrowInvalidArgument("compression_type must be None, '', 'GZIP' or 'ZLIB', got '", name, "'");
}

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kGzip: return "GZIP";
    case Compression::kZlib: return "ZLIB";
    default: return "uncompressed";
  }
}

RecordFileReader::RecordFileReader(const std::string& path, Compression compression)
    : path_(path), compression_(compression) {
  CheckCompression();
  std::FILE* f = Open(path, "rb");
  if (compression == Compression::kNone) {
    source_ = std::make_unique<PlainSource>(f);
  } else {
    source_ = std::make_unique<InflateSource>(f, path, compression);
  }
}

RecordFileReader::~RecordFileReader() = default;

void RecordFileReader::CheckCompression() {
  std::FILE* f = Open(path_, "rb");
  unsigned char head[12];
  const size_t n = std::fread(head, 1, sizeof(head), f);
  std::fclose(f);
  if (n == 0) return;  // empty: no records, whatever the compression
  const Guess g = GuessCompression(head, n);
  if (g.known && g.compression != compression_) {
    throw Error(Code::kDataLoss,
                StrCat(path_, ": the file looks ", g.compression == Compression::kNone ? "uncompressed" : "",
                       g.compression == Compression::kNone ? "" : CompressionName(g.compression),
                       g.compression == Compression::kNone ? "" : "-compressed", " but was read with ",
                       TypeArg(compression_), "; read it with ", TypeArg(g.compression)));
  }
}

bool RecordFileReader::Next(std::string* out) {
  unsigned char header[12];
  const size_t got = source_->Read(header, 12);
  if (got == 0) return false;
  if (got < 12) {
    throw Error(Code::kDataLoss, StrCat(path_, ": truncated record header at byte offset ", offset_, " (record ",
                                        count_, ")"));
  }
  if (loom::MaskCrc(loom::Crc32c(header, 8)) != Load32(header + 8)) {
    throw Error(Code::kDataLoss, StrCat(path_, ": corrupted record at byte offset ", offset_, " (record ", count_,
                                        "): the length's checksum does not match"));
  }
  const uint64_t length = Load64(header);
  if (length > loom::kMaxRecordBytes) {
    throw Error(Code::kDataLoss, StrCat(path_, ": record ", count_, " at byte offset ", offset_, " claims ", length,
                                        " bytes, more than the limit of ", loom::kMaxRecordBytes));
  }
  // A plain file says how many bytes are left: a record claiming more is
  // corrupt before anything is allocated for it.
  const int64_t remaining = source_->Remaining();
  if (remaining >= 0 && length > static_cast<uint64_t>(remaining)) {
    throw Error(Code::kDataLoss, StrCat(path_, ": truncated record at byte offset ", offset_, " (record ", count_,
                                        "): it claims ", length, " bytes, but only ", remaining,
                                        " remain in the file"));
  }
  // Otherwise grow as the data arrives, so that a corrupt length in a short
  // stream cannot make us allocate gigabytes up front.
  out->clear();
  bool complete = true;
  while (complete && out->size() < length) {
    const size_t step = static_cast<size_t>(std::min<uint64_t>(length - out->size(), kChunk));
    const size_t at = out->size();
    out->resize(at + step);
    complete = source_->Read(out->data() + at, step) == step;
  }
  unsigned char footer[4];
  if (!complete || source_->Read(footer, 4) != 4) {
    throw Error(Code::kDataLoss, StrCat(path_, ": truncated record at byte offset ", offset_, " (record ", count_,
                                        " of ", length, " bytes)"));
  }
  if (loom::MaskCrc(loom::Crc32c(out->data(), length)) != Load32(footer)) {
    throw Error(Code::kDataLoss, StrCat(path_, ": corrupted record at byte offset ", offset_, " (record ", count_,
                                        "): the data's checksum does not match"));
  }
  offset_ += 16 + length;
  ++count_;
  return true;
}

class RecordSink {
 public:
  RecordSink(const std::string& path, Compression c) : path_(path), compression_(c), file_(Open(path, "wb")) {
    if (c != Compression::kNone) {
      std::memset(&z_, 0, sizeof(z_));
      if (deflateInit2(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, WindowBits(c), 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        std::fclose(file_);
        throw Error(Code::kInternal, StrCat(path, ": zlib could not start deflating"));
      }
      out_.resize(kChunk);
    }
  }
  ~RecordSink() {
    if (compression_ != Compression::kNone) deflateEnd(&z_);
    if (file_) std::fclose(file_);
  }

  void Write(const void* data, size_t n) {
    if (compression_ == Compression::kNone) {
      ok_ = ok_ && std::fwrite(data, 1, n, file_) == n;
      return;
    }
    z_.next_in = static_cast<Bytef*>(const_cast<void*>(data));
    z_.avail_in = static_cast<uInt>(n);
    Deflate(Z_NO_FLUSH);
  }

  void Close() {
    if (compression_ != Compression::kNone) Deflate(Z_FINISH);
    ok_ = (std::fclose(file_) == 0) && ok_;
    file_ = nullptr;
    if (!ok_) throw Error(Code::kDataLoss, StrCat(path_, ": writing the records failed"));
  }

 private:
  // Compresses what is pending; with Z_FINISH, until the stream's end is written.
  void Deflate(int flush) {
    for (;;) {
      z_.next_out = out_.data();
      z_.avail_out = static_cast<uInt>(out_.size());
      const int rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) throw Error(Code::kInternal, StrCat(path_, ": zlib failed while compressing"));
      const size_t have = out_.size() - z_.avail_out;
      ok_ = ok_ && std::fwrite(out_.data(), 1, have, file_) == have;
      if (flush == Z_FINISH ? rc == Z_STREAM_END : (z_.avail_out != 0 && z_.avail_in == 0)) return;
    }
  }

  std::string path_;
  Compression compression_;
  std::FILE* file_;
  z_stream z_;
  std::vector<Bytef> out_;
  bool ok_ = true;
};

RecordFileWriter::RecordFileWriter(const std::string& path, Compression compression)
    : sink_(std::make_unique<RecordSink>(path, compression)) {}
RecordFileWriter::~RecordFileWriter() = default;

void RecordFileWriter::Write(const std::string& r) {
  unsigned char header[12], footer[4];
  Store64(header, r.size());
  Store32(header + 8, loom::MaskCrc(loom::Crc32c(header, 8)));
  Store32(footer, loom::MaskCrc(loom::Crc32c(r.data(), r.size())));
  sink_->Write(header, 12);
  sink_->Write(r.data(), r.size());
  sink_->Write(footer, 4);
}

void RecordFileWriter::Close() { sink_->Close(); }

void WriteRecordFile(const std::string& path, const std::vector<std::string>& records, Compression compression) {
  RecordFileWriter writer(path, compression);
  for (const std::string& r : records) writer.Write(r);
  writer.Close();
}

}  // namespace treadle::data
