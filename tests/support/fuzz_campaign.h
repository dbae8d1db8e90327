#pragma once
// The fuzz tests' seeds and case counts, which a longer campaign than the test command's can
// change: GRAFX_FUZZ_SEED=S (a whole number, default 0: the test command's cases) gives every
// fuzz test other seeds, GRAFX_FUZZ_SCALE=K (1 to 1000, default 1) runs K times its cases.
//
//   GRAFX_FUZZ_SEED=5 GRAFX_FUZZ_SCALE=20 build/bin/graph_file_fuzz_test

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace grafx::testing {

/// The environment variable `name` as a whole number in [low, high], or `fallback` if unset.
inline int64_t fuzz_setting(const char* name, int64_t fallback, int64_t low, int64_t high) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end             = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value < low || value > high)
    throw std::invalid_argument(std::string(name) + " must be a whole number from " +
                                std::to_string(low) + " to " + std::to_string(high) + ", got \"" +
                                text + "\"");
  return value;
}

/// A fuzz test's seed: `seed` itself in the test command, another one per GRAFX_FUZZ_SEED.
inline uint64_t fuzz_seed(uint64_t seed) {
  const auto campaign = uint64_t(fuzz_setting("GRAFX_FUZZ_SEED", 0, 0, INT64_MAX));
  return seed + campaign * 0x9E3779B97F4A7C15ull;  // spreads campaigns far apart
}

/// A fuzz test's number of cases (and the counts it expects of them), times GRAFX_FUZZ_SCALE.
inline int64_t fuzz_cases(int64_t cases) {
  return cases * fuzz_setting("GRAFX_FUZZ_SCALE", 1, 1, 1000);
}

}  // namespace grafx::testing
