#pragma once
/// FNV-1a, 64 bits: the hash of parameter seeds, fit records' file contents and stream programs'
/// checksums. Plain C++ (the stream engine, which runs without LibTorch, uses it).

#include <cstddef>
#include <cstdint>

namespace grafx {

inline constexpr uint64_t kFnv1aStart = 14695981039346656037ull;

/// The hash of n more bytes after `hash` (kFnv1aStart for the first): a file's hash may be
/// taken piece by piece.
inline uint64_t fnv1a(const void* data, size_t n, uint64_t hash = kFnv1aStart) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

}  // namespace grafx
