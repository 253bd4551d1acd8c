//===- Sha256.h - SHA-256 digests for cache keys ----------------*- C++ -*-===//
#ifndef TE_JIT_SHA256_H
#define TE_JIT_SHA256_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace te::cache {

/// Incremental SHA-256 (FIPS 180-4), without dependencies, so that the
/// runtime side of te-mlir can compute cache keys without LLVM.
class Sha256 {
public:
  Sha256();
  void update(const void *data, size_t size);
  void update(const std::string &text) { update(text.data(), text.size()); }
  /// The digest as 64 lowercase hex digits; the object is spent afterwards.
  std::string finishHex();

private:
  void compress(const uint8_t *block);
  uint32_t state[8];
  uint8_t buffer[64];
  size_t buffered = 0;
  uint64_t totalBytes = 0;
};

/// SHA-256 of a byte range, as hex.
std::string sha256Hex(const void *data, size_t size);

} // namespace te::cache

#endif // TE_JIT_SHA256_H
