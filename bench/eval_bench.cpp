// Whole-song evaluation benchmark: memory and time of a fit's whole-song loss (render of the
// console, then the mix loss) for songs of growing length, rendered whole (render + MixLoss)
// against in chunks (Fitter::evaluate: render_chunks + MixLossStream), in one run. Each
// measurement runs in a fresh process (this program again) so that its peak memory is its own:
// the peak resident memory above what the song's data (tracks and mix) already hold.
//
// Both float32 losses are compared with the same evaluation in float64 (in chunks).
//
//   build/bin/eval_bench [max_minutes=10] [max_whole_minutes=10] [max_float64_minutes=10]

#include <grafx/fit/fit.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/program.h>
#include <grafx/render/chunked.h>

#include "bench_support.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

using namespace grafx;

namespace {

constexpr int64_t kSampleRate = 30000;

/// A field of /proc/self/status in MiB (VmRSS, VmHWM).
double status_mib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  return 0;
}

enum class Mode { kWhole, kChunked, kChunkedFloat64 };

/// One measurement (in the child): prints "extra_peak_mib seconds loss data_mib".
int measure(Mode mode, double minutes) {
  const int64_t length = int64_t(minutes * 60 * kSampleRate);
  ConsoleOptions options;
  options.n_tracks     = 8;
  options.track_groups = ConsoleOptions::even_groups(8, 3);
  options.chain        = default_console_chain();
  options.dry_wet      = true;
  Graph console        = build_console(options, registry_node_types()).graph;
  at::manual_seed(0);
  at::Tensor tracks = at::randn({8, 2, length}) * 0.1;
  at::Tensor mix    = tracks.sum(0) * 0.5;
  FitOptions fit;
  fit.n_steps = 0;
  Fitter fitter(console, tracks, mix, kSampleRate, fit);
  const double data = status_mib("VmRSS");
  std::ofstream("/proc/self/clear_refs") << "5";  // the peak starts again from here
  auto start = std::chrono::steady_clock::now();
  double loss;
  if (mode == Mode::kChunked) {
    loss = fitter.evaluate().total.item<double>();
  } else {
    // The reference: the same parameters and data in float64, in chunks (equal to a whole
    // float64 render within 1e-8, tests/render/chunked_render_test.cpp) to fit in memory.
    const at::ScalarType dtype = mode == Mode::kChunkedFloat64 ? at::kDouble : at::kFloat;
    c10::NoGradGuard no_grad;
    RenderPlan plan = make_render_plan(to_tensor(console), fit.schedule);
    Parameters parameters;
    for (const auto& [type, named] : fitter.parameters())
      for (const auto& [name, p] : named.named()) parameters[type][name] = p.detach().to(dtype);
    MixLossOptions whole = fitter.options().loss;
    whole.skip_samples   = 0;
    at::Tensor target    = mix.to(dtype);
    if (mode == Mode::kChunkedFloat64) {
      MixLossStream stream = MixLoss(whole).stream(length);
      render_chunks(plan, fitter.processors(), parameters, tracks.to(dtype),
                    [&](int64_t start, const at::Tensor& outputs) {
                      stream.add(outputs[0], target.narrow(-1, start, outputs.size(-1)));
                    });
      loss = stream.finish().total.item<double>();
    } else {
      at::Tensor rendered = render(plan, fitter.processors(), parameters, tracks).outputs[0];
      loss = MixLoss(whole).terms(rendered.unsqueeze(0), target.unsqueeze(0)).total.item<double>();
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%.1f %.2f %.9g %.1f\n", status_mib("VmHWM") - data, seconds, loss, data);
  return 0;
}

std::string scientific(double value) {
  std::ostringstream s;
  s << std::scientific << std::setprecision(1) << value;
  return s.str();
}

struct Result {
  double extra_mib = 0, seconds = 0, loss = 0, data_mib = 0;
  bool ok = false;
};

const char* const kModeNames[] = {"whole", "chunked", "chunked-float64"};

Result run_child(const char* self, Mode mode, double minutes) {
  std::ostringstream command;
  // glibc's defaults in the child: memory freed while the data is read would otherwise stay
  // resident, count as data and hide the evaluation's own peak (grafx/memory.h).
  command << "GRAFX_KEEP_FREED_MEMORY=0 " << self << " --measure " << kModeNames[int(mode)] << " "
          << minutes;
  Result r;
  FILE* pipe = popen(command.str().c_str(), "r");
  if (!pipe) return r;
  r.ok = std::fscanf(pipe, "%lf %lf %lf %lf", &r.extra_mib, &r.seconds, &r.loss, &r.data_mib) == 4;
  r.ok = pclose(pipe) == 0 && r.ok;
  return r;
}

int run(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--measure") == 0)
    for (int mode = 0; mode < 3; ++mode)
      if (std::strcmp(argv[2], kModeNames[mode]) == 0)
        return measure(Mode(mode), std::stod(argv[3]));
  auto args = bench::parse_arguments(argc, argv,
                                     {{"max_minutes", 10, 0.1, 120},
                                      {"max_whole_minutes", 10, 0, 120},
                                      {"max_float64_minutes", 10, 0, 120}});
  bench::setup_threads();
  std::cout << "# Whole-song evaluation\n\n" << bench::machine_description() << "\n\n";
  std::cout << "Console: 8 stereo tracks, 3 subgroups, chain e-c-n-s-g-d-r with dry/wet, "
               "initial parameters, at 30 kHz; the mix loss of the whole song (no skip). "
               "Memory: peak resident memory of the evaluation above the song's data already "
               "held (tracks and mix), each measurement in a fresh process.\n\n";
  bench::Table table({"song (min)", "data (MiB)", "whole: peak (MiB)", "whole: time (s)",
                      "chunks: peak (MiB)", "chunks: time (s)", "whole vs chunks",
                      "whole vs float64", "chunks vs float64"});
  std::vector<double> lengths;
  for (double m : {1.0, 2.0, 5.0, 10.0, 20.0, 60.0, 120.0})
    if (m <= args[0]) lengths.push_back(m);
  for (double minutes : lengths) {
    Result chunked = run_child(argv[0], Mode::kChunked, minutes), whole, reference;
    if (minutes <= args[1]) whole = run_child(argv[0], Mode::kWhole, minutes);
    if (minutes <= args[2]) reference = run_child(argv[0], Mode::kChunkedFloat64, minutes);
    auto cell = [](const Result& r, double value, int digits) {
      return r.ok ? bench::fixed(value, digits) : std::string("-");
    };
    auto difference = [](const Result& a, const Result& b) {  // relative, of the losses
      return a.ok && b.ok ? scientific(std::abs(a.loss - b.loss) / std::abs(b.loss))
                          : std::string("-");
    };
    table.add_row({bench::fixed(minutes, 0), cell(chunked, chunked.data_mib, 0),
                   cell(whole, whole.extra_mib, 0), cell(whole, whole.seconds, 1),
                   cell(chunked, chunked.extra_mib, 0), cell(chunked, chunked.seconds, 1),
                   difference(whole, chunked), difference(whole, reference),
                   difference(chunked, reference)});
  }
  table.print(std::cout);
  return 0;
}

}  // namespace

// Errors end the program as they end the grafx CLI: one line with a code, status 1.
int main(int argc, char** argv) {
  return grafx::run_program("eval_bench", [&] { return run(argc, argv); });
}
