// A host of grafx's real-time engine alone (find_package(grafx COMPONENTS stream), no LibTorch),
// as a CLAP or VST3 plugin would be: it loads the program `grafx export-lv2` wrote into a bundle,
// streams a second of noise through it in blocks of 256 samples, processed in place, and checks
// what comes out; a program that is not one is refused with its code.
#include <grafx/error.h>
#include <grafx/stream/stream.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: stream_host BUNDLE/stream.program\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  const std::string program{std::istreambuf_iterator<char>(file), {}};
  try {
    grafx::Stream::load(program.substr(0, program.size() / 2));
    std::printf("a truncated program was loaded\n");
    return 1;
  } catch (const grafx::Error& e) {
    std::printf("truncated program refused: [%s]\n", e.code().c_str());
  }

  constexpr int64_t block = 256;
  grafx::Stream stream    = grafx::Stream::load(program, block);
  const int64_t n_in      = stream.n_sources() * stream.source_channels(),
                n_out     = stream.n_outputs() * stream.output_channels();
  // In place, as hosts do: the outputs share the first inputs' buffers.
  std::vector<std::vector<float>> buffers(size_t(std::max(n_in, n_out)), std::vector<float>(block));
  std::vector<const float*> in;
  std::vector<float*> out;
  for (int64_t i = 0; i < n_in; ++i) in.push_back(buffers[size_t(i)].data());
  for (int64_t o = 0; o < n_out; ++o) out.push_back(buffers[size_t(o)].data());

  uint32_t seed        = 1;
  double peak          = 0;
  bool finite          = true;
  const int64_t blocks = stream.sample_rate() / block;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t i = 0; i < n_in; ++i)
      for (float& x : buffers[size_t(i)]) {
        seed = seed * 1664525u + 1013904223u;
        x    = 0.25f * (float(seed >> 8) / float(1 << 24) - 0.5f);
      }
    stream.process(in.data(), out.data(), block);
    for (int64_t o = 0; o < n_out; ++o)
      for (float y : buffers[size_t(o)]) {
        finite = finite && std::isfinite(y);
        peak   = std::max(peak, double(std::fabs(y)));
      }
  }
  std::printf(
      "%lld sources x %lld channels -> %lld outputs x %lld channels at %lld Hz, latency "
      "%lld samples: %lld blocks, %lld silenced, output peak %.4f\n",
      (long long)stream.n_sources(), (long long)stream.source_channels(),
      (long long)stream.n_outputs(), (long long)stream.output_channels(),
      (long long)stream.sample_rate(), (long long)stream.latency_samples(),
      (long long)stream.status().blocks, (long long)stream.status().silenced_blocks, peak);
  const bool ok = finite && peak > 1e-4 && stream.status().blocks == blocks &&
                  stream.status().silenced_blocks == 0;
  return ok ? 0 : 1;
}
