// TensorFlow's TFRecord format, in which schedule files are written: each
// record is
//   uint64 length | uint32 masked crc32c(length) | data | uint32 masked crc32c(data)
// little-endian. These are its checksum and its bound; the one reader and
// writer of record files (plain, GZIP or ZLIB) is data/record_file.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace treadle::loom {

// CRC-32C (Castagnoli), as used by TFRecord, and TFRecord's masking of it.
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);
inline uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

// Records larger than this are refused as corrupt rather than allocated.
constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 31;

}  // namespace treadle::loom
