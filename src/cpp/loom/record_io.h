// Schedule files: TensorFlow's TFRecord format, so tf.data.TFRecordDataset
// reads ours and we read TensorFlow's. Each record is
//   uint64 length | uint32 masked crc32c(length) | data | uint32 masked crc32c(data)
// little-endian. Reading checks both checksums and bounds the length by what
// remains of the file, so a header claiming gigabytes allocates nothing.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace treadle::loom {

// CRC-32C (Castagnoli), as used by TFRecord, and TFRecord's masking of it.
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);
inline uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

// Records larger than this are refused as corrupt rather than allocated.
constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 31;

void WriteRecords(const std::string& path, const std::vector<std::string>& records);

class RecordReader {
 public:
  explicit RecordReader(const std::string& path);  // NotFound when it cannot be opened
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // The next record into *out; false at a clean end of file. DataLoss names
  // the file and byte offset of a truncated or corrupt record.
  bool Next(std::string* out);
  uint64_t offset() const { return offset_; }
  uint64_t records_read() const { return count_; }

 private:
  static constexpr uint64_t kUnknownSize = ~uint64_t{0};
  bool ReadData(uint64_t length, std::string* out);  // false when the file ends first

  std::string path_;
  std::FILE* file_ = nullptr;
  uint64_t size_ = kUnknownSize;  // of a regular file
  uint64_t offset_ = 0;
  uint64_t count_ = 0;
};

std::vector<std::string> ReadAllRecords(const std::string& path);

}  // namespace treadle::loom
