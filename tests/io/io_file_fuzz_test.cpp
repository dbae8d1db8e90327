// Feeds thousands of randomly corrupted parameter files (safetensors: parameters and fit
// checkpoints) and audio files through their readers. Built with AddressSanitizer and
// UndefinedBehaviorSanitizer (see tests/CMakeLists.txt): every file must either load or throw
// one grafx::Error naming it; anything else fails, and memory errors abort under the sanitizers.

#include <grafx/error.h>
#include <grafx/io/audio.h>
#include <grafx/io/safetensors.h>

#include "support/fuzz_campaign.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

namespace grafx {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Random edits: flipped bytes (more of them in the first `header` bytes, where the structure
/// is), deletions, insertions, truncation, duplicated spans, and huge little-endian numbers.
std::string corrupt(std::string bytes, size_t header, std::mt19937_64& rng) {
  int edits = 1 + int(rng() % 4);
  for (int i = 0; i < edits && !bytes.empty(); ++i) {
    size_t at = rng() % 2 ? rng() % std::min(bytes.size(), header) : rng() % bytes.size();
    switch (rng() % 6) {
      case 0:
        bytes[at] = char(rng() % 256);
        break;
      case 1:
        bytes.erase(at, 1 + rng() % 20);
        break;
      case 2:
        bytes.insert(at, 1, "{}[],:\"0123456789-e.xF"[rng() % 22]);
        break;
      case 3:
        bytes.resize(at);
        break;
      case 4:
        bytes.insert(at, bytes.substr(rng() % bytes.size(), rng() % 30));
        break;
      default:  // a size field gone wild
        for (size_t k = 0; k < 4 && at + k < bytes.size(); ++k) bytes[at + k] = char(0xff);
    }
  }
  return bytes;
}

struct Counts {
  int64_t loaded = 0, rejected = 0;
};

template <class Load>
void check_loads_or_throws(const std::string& name, Load&& load, Counts& counts) {
  try {
    load();
    ++counts.loaded;
  } catch (const Error& e) {
    ASSERT_FALSE(e.code().empty());
    ASSERT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    ++counts.rejected;
  }
}

class IoFileFuzz : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("grafx_io_fuzz_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_F(IoFileFuzz, CorruptedSafetensorsLoadOrThrowOneClearError) {
  // A parameter file and a checkpoint-like file: several dtypes, shapes and metadata.
  save_safetensors((dir / "p.safetensors").string(),
                   {{"eq.log_magnitude", at::randn({3, 1024})},
                    {"gain_pan.log_gain", at::randn({3, 2}, at::kDouble)},
                    {"history", at::zeros({5, 6}, at::kDouble)},
                    {"optimizer/step", at::ones({1}, at::kLong)}},
                   {{"format", "grafx.parameters"}, {"node_ids.eq", "[1,2,3]"}});
  const std::string seed = read_bytes(dir / "p.safetensors");
  std::mt19937_64 rng(testing::fuzz_seed(7));
  Counts counts;
  for (int64_t i = 0, cases = testing::fuzz_cases(5000); i < cases; ++i) {
    std::string bytes = corrupt(seed, 8 + 400, rng);
    check_loads_or_throws(
        "fuzz.safetensors", [&] { parse_safetensors(bytes, "fuzz.safetensors"); }, counts);
  }
  EXPECT_GT(counts.rejected, testing::fuzz_cases(2500));
  std::cout << "safetensors: " << counts.loaded << " loaded, " << counts.rejected << " rejected\n";
}

TEST_F(IoFileFuzz, CorruptedAudioFilesLoadOrThrowOneClearError) {
  std::mt19937_64 rng(testing::fuzz_seed(8));
  Counts counts;
  const fs::path file = dir / "fuzz.wav";
  for (const char* extension : {".wav", ".flac"}) {
    const fs::path clean = dir / (std::string("clean") + extension);
    write_audio(clean.string(), at::rand({2, 2000}) - 0.5, 44100, true,
                std::string(extension) == ".wav" ? AudioEncoding::kFloat32 : AudioEncoding::kPcm16);
    const std::string seed = read_bytes(clean);
    for (int64_t i = 0, cases = testing::fuzz_cases(2500); i < cases; ++i) {
      std::ofstream(file, std::ios::binary) << corrupt(seed, 80, rng);
      check_loads_or_throws(
          file.string(), [&] { read_audio(file.string()); }, counts);
    }
  }
  EXPECT_GT(counts.rejected, testing::fuzz_cases(1000));
  std::cout << "audio: " << counts.loaded << " loaded, " << counts.rejected << " rejected\n";
}

}  // namespace
}  // namespace grafx
