// TFRecord files as td.data reads and writes them: TensorFlow's record
// framing (see loom/record_io.h) inside an optional GZIP or ZLIB stream, the
// whole file being one compressed stream as TensorFlow writes it.
//
// Reading checks what it reads: a file whose first bytes say it is compressed
// differently from what the caller asked for is refused with a message naming
// the compression it looks like, rather than a checksum error.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace treadle::data {

enum class Compression { kNone, kGzip, kZlib };

// "" or "NONE", "GZIP", "ZLIB" (TensorFlow's compression_type strings);
// InvalidArgument for anything else.
Compression ParseCompression(const std::string& name);
const char* CompressionName(Compression c);

// A file's bytes, decompressed as it is read.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to n bytes into out; fewer only at the end of the data.
  virtual size_t Read(void* out, size_t n) = 0;
  // The bytes left to read, where the source knows it (a plain file); -1
  // where it does not (a compressed stream, a pipe).
  virtual int64_t Remaining() const { return -1; }
};

class RecordFileReader {
 public:
  // NotFound when the file cannot be opened; DataLoss when its first bytes
  // show a compression other than `compression`.
  RecordFileReader(const std::string& path, Compression compression);
  ~RecordFileReader();
  RecordFileReader(const RecordFileReader&) = delete;
  RecordFileReader& operator=(const RecordFileReader&) = delete;

  // The next record into *out; false at a clean end. DataLoss names the file,
  // the record and its offset in the (decompressed) data when a record is
  // truncated or corrupt.
  bool Next(std::string* out);
  uint64_t records_read() const { return count_; }
  // The byte offset of the next record in the (decompressed) data.
  uint64_t offset() const { return offset_; }

 private:
  void CheckCompression();  // before the first record
  std::string path_;
  Compression compression_;
  std::unique_ptr<ByteSource> source_;
  uint64_t offset_ = 0;
  uint64_t count_ = 0;
  bool checked_ = false;
};

class RecordSink;

// Writes records one by one; Close() finishes the file (and the compressed
// stream) and reports a failed write as DataLoss. A writer dropped without
// Close() leaves an unfinished file, which readers refuse.
class RecordFileWriter {
 public:
  RecordFileWriter(const std::string& path, Compression compression);
  ~RecordFileWriter();
  RecordFileWriter(const RecordFileWriter&) = delete;
  RecordFileWriter& operator=(const RecordFileWriter&) = delete;
  void Write(const std::string& record);
  void Close();

 private:
  std::unique_ptr<RecordSink> sink_;
};

// Writes `records` to `path` as a TFRecord file, compressed as asked.
void WriteRecordFile(const std::string& path, const std::vector<std::string>& records, Compression compression);

}  // namespace treadle::data
