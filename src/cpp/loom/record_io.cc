#include "loom/record_io.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <sys/stat.h>

#include "util/errors.h"
#include "util/paths.h"

namespace treadle::loom {

namespace {

// Slicing-by-8 tables for the reflected Castagnoli polynomial 0x82F63B78.
struct Crc32cTables {
  std::array<std::array<uint32_t, 256>, 8> t;
  Crc32cTables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};

const Crc32cTables& Tables() {
  static const Crc32cTables tables;
  return tables;
}

uint32_t Load32(const unsigned char* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

void Store32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

void Store64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

uint64_t Load64(const unsigned char* p) { return uint64_t(Load32(p)) | uint64_t(Load32(p + 4)) << 32; }

// A file that starts like a GZIP or ZLIB stream was compressed as a whole (as
// TensorFlow writes compressed record files): say so, for the first record.
std::string CompressionHint(const unsigned char* head) {
  if (head[0] == 0x1f && head[1] == 0x8b) {
    return "; the file looks GZIP-compressed: read it with compression_type='GZIP' (td.data.TFRecordDataset, "
           "td.loom.read_schedules)";
  }
  if ((head[0] & 0x0f) == 8 && (head[0] >> 4) <= 7 && ((head[0] << 8) | head[1]) % 31 == 0) {
    return "; the file looks ZLIB-compressed: read it with compression_type='ZLIB' (td.data.TFRecordDataset, "
           "td.loom.read_schedules)";
  }
  return "";
}

}  // namespace

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  const auto& t = Tables().t;
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  while (size >= 8) {
    const uint32_t lo = Load32(p) ^ c;
    const uint32_t hi = Load32(p + 4);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
        t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    size -= 8;
  }
  while (size--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
  return ~c;
}

void WriteRecords(const std::string& path, const std::vector<std::string>& records) {
  std::FILE* f = std::fopen(CheckedPath(path).c_str(), "wb");
  if (!f) throw Error(Code::kNotFound, StrCat(path, ": cannot open for writing: ", std::strerror(errno)));
  bool ok = true;
  for (const std::string& r : records) {
    unsigned char header[12], footer[4];
    Store64(header, r.size());
    Store32(header + 8, MaskCrc(Crc32c(header, 8)));
    Store32(footer, MaskCrc(Crc32c(r.data(), r.size())));
    ok = ok && std::fwrite(header, 1, 12, f) == 12 && std::fwrite(r.data(), 1, r.size(), f) == r.size() &&
         std::fwrite(footer, 1, 4, f) == 4;
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) throw Error(Code::kDataLoss, StrCat(path, ": writing the records failed"));
}

RecordReader::RecordReader(const std::string& path) : path_(path) {
  file_ = std::fopen(CheckedPath(path).c_str(), "rb");
  if (!file_) throw Error(Code::kNotFound, StrCat(path, ": cannot open: ", std::strerror(errno)));
  struct stat st;
  if (fstat(fileno(file_), &st) == 0 && S_ISREG(st.st_mode)) size_ = static_cast<uint64_t>(st.st_size);
}

RecordReader::~RecordReader() {
  if (file_) std::fclose(file_);
}

bool RecordReader::Next(std::string* out) {
  unsigned char header[12];
  const size_t got = std::fread(header, 1, 12, file_);
  if (got == 0) return false;
  if (got < 12) {
    throw Error(Code::kDataLoss, StrCat(path_, ": truncated record header at byte offset ", offset_, " (record ",
                                        count_, ")"));
  }
  if (MaskCrc(Crc32c(header, 8)) != Load32(header + 8)) {
    throw Error(Code::kDataLoss, StrCat(path_, ": corrupted record at byte offset ", offset_, " (record ", count_,
                                        "): the length's checksum does not match", offset_ == 0 ? CompressionHint(header) : ""));
  }
  const uint64_t length = Load64(header);
  if (length > kMaxRecordBytes) {
    throw Error(Code::kDataLoss, StrCat(path_, ": record ", count_, " at byte offset ", offset_, " claims ", length,
                                        " bytes, more than the limit of ", kMaxRecordBytes));
  }
  // A record and its footer must fit in what is left of the file: a header
  // is 12 bytes, and no more is allocated than the file can fill.
  if (size_ != kUnknownSize && length + 4 > size_ - std::min(size_, offset_ + 12)) {
    const uint64_t left = size_ - std::min(size_, offset_ + 12);
    throw Error(Code::kDataLoss, StrCat(path_, ": truncated record at byte offset ", offset_, " (record ", count_,
                                        "): it claims ", length, " bytes, but only ", left, " remain"));
  }
  unsigned char footer[4];
  if (!ReadData(length, out) || std::fread(footer, 1, 4, file_) != 4) {
    throw Error(Code::kDataLoss, StrCat(path_, ": truncated record at byte offset ", offset_, " (record ", count_,
                                        "): it claims ", length, " bytes, more than remain"));
  }
  if (MaskCrc(Crc32c(out->data(), length)) != Load32(footer)) {
    throw Error(Code::kDataLoss, StrCat(path_, ": corrupted record at byte offset ", offset_, " (record ", count_,
                                        "): the data's checksum does not match"));
  }
  offset_ += 16 + length;
  ++count_;
  return true;
}

bool RecordReader::ReadData(uint64_t length, std::string* out) {
  // In steps, so a stream of unknown size (a pipe) grows the buffer only as
  // far as its bytes arrive.
  constexpr uint64_t kStep = uint64_t{1} << 24;
  out->clear();
  while (out->size() < length) {
    const size_t at = out->size();
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kStep, length - at));
    out->resize(at + n);
    if (std::fread(out->data() + at, 1, n, file_) != n) return false;
  }
  return true;
}

std::vector<std::string> ReadAllRecords(const std::string& path) {
  RecordReader reader(path);
  std::vector<std::string> records;
  std::string r;
  while (reader.Next(&r)) records.push_back(std::move(r));
  return records;
}

}  // namespace treadle::loom
