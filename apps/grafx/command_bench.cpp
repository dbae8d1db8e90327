// grafx bench GRAPH: how fast a graph renders forward, backward and both, and how much memory a
// forward+backward takes, with random sources and initial parameters.

#include "arguments.h"
#include "commands.h"
#include "console_options.h"

#include <grafx/graph/graph_tensor.h>
#include <grafx/memory.h>
#include <grafx/plan/render_plan.h>
#include <grafx/render/make_stream.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>
#include <grafx/stream/host_stream.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <sstream>

#include <unistd.h>

namespace grafx::cli {
namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// Seconds of `process` (a stream's, from `reset`) over `sources` (K×C×L float32) in blocks:
/// those of each block, in order.
template <typename Process, typename Reset>
std::vector<double> time_blocks(const Process& process, const Reset& reset,
                                const at::Tensor& sources, int64_t output_channels, int64_t block) {
  const int64_t length = sources.size(2);
  at::Tensor outputs   = at::empty({output_channels, length});
  std::vector<const float*> in(size_t(sources.size(0) * sources.size(1)));
  std::vector<float*> out(static_cast<size_t>(output_channels));
  reset();
  std::vector<double> seconds;
  for (int64_t start = 0; start < length; start += block) {
    for (size_t k = 0; k < in.size(); ++k)
      in[k] = sources.data_ptr<float>() + int64_t(k) * length + start;
    for (size_t k = 0; k < out.size(); ++k)
      out[k] = outputs.data_ptr<float>() + int64_t(k) * length + start;
    const auto from = Clock::now();
    process(in.data(), out.data(), std::min(block, length - start));
    seconds.push_back(milliseconds_since(from) / 1000);
  }
  return seconds;
}

const Stream& stream_of(const Stream& stream) { return stream; }
const Stream& stream_of(const HostStream& host) { return host.stream(); }

/// grafx bench --stream: the real-time factor of streaming `graph` on one core per block size,
/// beside the offline render's on one thread.
/// With a host rate, the same stream in a host at that rate (HostStream: the sources converted
/// to the stream's rate and the outputs back) too.
void bench_stream(const Graph& graph, const std::vector<int64_t>& blocks, double seconds,
                  SampleRate sample_rate, SampleRate host_rate, int64_t repeats,
                  const std::string& name, bool json) {
  at::set_num_threads(1);
  const Processors processors = make_processors(graph.types(), {sample_rate});
  const Parameters parameters = create_parameters(graph, processors, {0, at::kFloat, false});
  const int64_t length        = std::max<int64_t>(1, std::llround(seconds * double(sample_rate)));
  const int64_t n_sources     = graph.count_per_type()[NodeTypes::kIn];
  at::manual_seed(0);
  const at::Tensor sources = 0.1 * at::randn({n_sources, 2, length});
  // A stream per block size, made for it as a host makes its plugin for its block size (its
  // convolutions are planned for calls of that many samples).
  const auto stream_for_block = [&](int64_t block) {
    return grafx::make_stream(graph, processors, parameters, {sample_rate, block, 2});
  };
  // Rows of real-time factors per block size: of a stream at its rate, or in a host; the first
  // block's stream gives the latency and the time to make one.
  struct Timed {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    int64_t latency             = 0;
    double setup_ms             = 0;
  };
  auto time_rows = [&](const auto& make, const at::Tensor& input, SampleRate rate) {
    Timed timed;
    nlohmann::ordered_json& rows = timed.rows;
    for (int64_t block : blocks) {
      const auto made = Clock::now();
      auto streamed   = make(block);
      if (rows.empty())
        timed.setup_ms = milliseconds_since(made), timed.latency = streamed.latency_samples();
      const Stream& stream       = stream_of(streamed);
      const int64_t output_count = stream.n_outputs() * stream.output_channels();
      const auto process         = [&](const float* const* in, float* const* out, int64_t n) {
        streamed.process(in, out, n);
      };
      const auto reset = [&] { streamed.reset(); };
      // The slowest block is the slowest of the blocks' fastest runs: the stream's own bursts
      // of work (the same blocks in every run), not a moment the machine ran something else.
      std::vector<double> totals, fastest;
      time_blocks(process, reset, input, output_count, block);  // warm-up
      for (int64_t r = 0; r < repeats; ++r) {
        const std::vector<double> run = time_blocks(process, reset, input, output_count, block);
        totals.push_back(std::accumulate(run.begin(), run.end(), 0.0));
        if (fastest.empty()) fastest = run;
        for (size_t b = 0; b < run.size(); ++b) fastest[b] = std::min(fastest[b], run[b]);
      }
      const double total = median(totals);
      rows.push_back({{"block", block},
                      {"real_time_factor", seconds / total},
                      {"mean_block_us", 1e6 * total / double((input.size(2) + block - 1) / block)},
                      {"slowest_block_us", 1e6 * *std::max_element(fastest.begin(), fastest.end())},
                      {"block_period_us", 1e6 * double(block) / double(rate)}});
    }
    return timed;
  };
  const Timed own       = time_rows(stream_for_block, sources, sample_rate);  // at its own rate
  const int64_t latency = own.latency;
  Timed host;
  if (host_rate > 0 && host_rate != sample_rate) {
    const auto make_host = [&](int64_t block) {  // for calls of `block` host samples
      return HostStream(stream_for_block(HostStream::stream_block(block, sample_rate, host_rate)),
                        host_rate);
    };
    const at::Tensor fast =
        0.1 *
        at::randn({n_sources, 2, std::max<int64_t>(1, std::llround(seconds * double(host_rate)))});
    host = time_rows(make_host, fast, host_rate);
  }
  const RenderPlan plan = make_render_plan(to_tensor(graph), ScheduleMethod::kOptimal);
  std::vector<double> offline;
  auto render_once = [&] {
    c10::NoGradGuard no_grad;
    const auto from = Clock::now();
    render(plan, processors, parameters, sources);
    return milliseconds_since(from) / 1000;
  };
  render_once();
  for (int64_t r = 0; r < repeats; ++r) offline.push_back(render_once());
  const double offline_factor = seconds / median(offline);
  if (json) {
    nlohmann::ordered_json result = {{"graph", name},
                                     {"nodes", graph.n_nodes()},
                                     {"sample_rate", sample_rate},
                                     {"seconds", seconds},
                                     {"latency_samples", latency},
                                     {"setup_ms", own.setup_ms},
                                     {"blocks", own.rows},
                                     {"offline_real_time_factor", offline_factor}};
    if (!host.rows.empty())
      result["host"] = {
          {"rate", host_rate}, {"latency_samples", host.latency}, {"blocks", host.rows}};
    std::cout << result.dump() << "\n";
    return;
  }
  std::cout << name << ": " << graph.n_nodes() << " nodes, streamed on one core\n"
            << n_sources << " stereo sources of " << seconds << " s at " << sample_rate
            << " Hz, initial parameters; medians of " << repeats << " runs after a warm-up\n"
            << std::fixed << std::setprecision(1) << "  latency " << latency << " samples ("
            << 1000.0 * double(latency) / double(sample_rate) << " ms); stream made in "
            << own.setup_ms << " ms\n";
  auto print = [](const nlohmann::ordered_json& table) {
    for (const auto& row : table)
      std::cout << "  blocks of " << std::setw(5) << row["block"].get<int64_t>() << "  "
                << std::setw(7) << row["real_time_factor"].get<double>() << "x real time  "
                << "(mean block " << row["mean_block_us"].get<double>() << " us, slowest "
                << row["slowest_block_us"].get<double>() << " us, of "
                << row["block_period_us"].get<double>() << " us)\n";
  };
  print(own.rows);
  if (!host.rows.empty()) {
    std::cout << "in a " << host_rate << " Hz host (converted to " << sample_rate
              << " Hz and back), latency " << host.latency << " samples:\n";
    print(host.rows);
  }
  std::cout << "  offline render (1 thread) " << std::setw(7) << offline_factor << "x real time\n";
}

}  // namespace

void add_bench_command(CLI::App& app) {
  struct Args {
    std::string graph, method = "optimal";
    double seconds         = 3.8;
    SampleRate sample_rate = 30000, host_rate = 0;
    int64_t repeats = 5, threads = 0;
    bool json = false, stream = false;
    std::vector<int64_t> blocks = {64, 512};
  };
  auto args     = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Time a graph's render (forward, backward, both) and its peak memory, with random "
      "sources and initial parameters");
  cmd->add_option("graph", args->graph, "Graph file (.json)")->required();
  cmd->add_option("--seconds", args->seconds, "Length of the sources")
      ->capture_default_str()
      ->check(finite_number(0, false))
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--sample-rate", args->sample_rate, "Sample rate (Hz)")
      ->capture_default_str()
      ->check(CLI::Range(8000, 192000));
  cmd->add_option("--method", args->method, "Schedule: one-by-one, greedy, beam or optimal")
      ->capture_default_str()
      ->check(CLI::IsMember({"one-by-one", "greedy", "beam", "optimal"}));
  cmd->add_option("--repeats", args->repeats, "Timed runs of each measurement (the median counts)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--threads", args->threads,
                  "CPU threads for LibTorch (default: grafx's --threads, all cores)")
      ->check(CLI::Range(1, 1024));
  CLI::Option* stream =
      cmd->add_flag("--stream", args->stream,
                    "Time streaming instead (grafx stream), on one core: the real-time factor per "
                    "block size and the slowest block (of each block's fastest run), beside the "
                    "offline render's on one thread");
  cmd->add_option("--host-rate", args->host_rate,
                  "With --stream, time it in a host at this rate too (converted to --sample-rate "
                  "and back, as the LV2 plugin runs it)")
      ->check(CLI::Range(int64_t(1000), int64_t(768000)))
      ->needs(stream);
  cmd->add_option("--blocks", args->blocks, "Block sizes of --stream")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  cmd->add_flag("--json", args->json,
                "Print one JSON object (forward_ms, backward_ms, forward_backward_ms, "
                "peak_memory_mib, ...) instead of text");
  cmd->callback([args] {
    if (args->threads > 0) at::set_num_threads(int(args->threads));
    Graph graph = load_graph_file(args->graph);
    if (args->stream)
      return bench_stream(graph, args->blocks, args->seconds, args->sample_rate, args->host_rate,
                          args->repeats, args->graph, args->json);
    RenderPlan plan       = make_render_plan(to_tensor(graph), parse_schedule_method(args->method));
    Processors processors = make_processors(graph.types(), {args->sample_rate});
    const int64_t length  = std::max<int64_t>(1, std::llround(args->seconds * args->sample_rate));
    at::manual_seed(0);
    const at::Tensor sources = 0.1 * at::randn({plan.n_sources, 2, length});
    const Parameters fixed   = create_parameters(graph, processors, {0, at::kFloat, false});
    Parameters trained       = create_parameters(graph, processors, {0});

    const bool show_status = !args->json && isatty(STDERR_FILENO);  // a live line on terminals
    auto status            = [&](const std::string& what) {
      if (show_status) std::cerr << "\rbench: " << what << "        " << std::flush;
    };
    auto forward = [&] {
      c10::NoGradGuard no_grad;
      render(plan, processors, fixed, sources);
    };
    double backward_ms    = 0;  // of the last forward_backward()
    auto forward_backward = [&] {
      at::Tensor loss          = render(plan, processors, trained, sources).outputs.pow(2).mean();
      const auto backward_from = Clock::now();
      loss.backward();
      backward_ms = milliseconds_since(backward_from);
      for (auto& [type, values] : trained)
        for (auto& [name, tensor] : values.named()) tensor.mutable_grad() = at::Tensor();
    };
    std::vector<double> forward_ms, backward_all_ms, both_ms;
    status("warming up");
    forward();
    forward_backward();
    for (int64_t r = 0; r < args->repeats; ++r) {
      status("run " + std::to_string(r + 1) + "/" + std::to_string(args->repeats));
      auto start = Clock::now();
      forward();
      forward_ms.push_back(milliseconds_since(start));
      start = Clock::now();
      forward_backward();
      both_ms.push_back(milliseconds_since(start));
      backward_all_ms.push_back(backward_ms);
    }
    status("peak memory");
    const double peak_mib = peak_memory_growth_mib(forward_backward);
    if (show_status) std::cerr << "\r" << std::string(40, ' ') << "\r";

    const double f = median(forward_ms), b = median(backward_all_ms), fb = median(both_ms);
    const int threads = at::get_num_threads();
    if (args->json) {
      auto number = [](double value) {  // NaN (memory not measurable) as null
        return std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json();
      };
      nlohmann::ordered_json result = {{"graph", args->graph},
                                       {"nodes", graph.n_nodes()},
                                       {"calls", plan.n_calls()},
                                       {"method", to_string(plan.method)},
                                       {"threads", threads},
                                       {"seconds", args->seconds},
                                       {"sample_rate", args->sample_rate},
                                       {"repeats", args->repeats},
                                       {"forward_ms", f},
                                       {"backward_ms", b},
                                       {"forward_backward_ms", fb},
                                       {"peak_memory_mib", number(peak_mib)}};
      std::cout << result.dump() << "\n";
      return;
    }
    std::ostringstream memory;
    memory << std::fixed << std::setprecision(1) << peak_mib << " MiB";
    std::cout << args->graph << ": " << graph.n_nodes() << " nodes, " << plan.n_calls()
              << " processor calls (" << to_string(plan.method)
              << (plan.proven_optimal ? ", proven optimal" : "") << ")\n"
              << plan.n_sources << " stereo sources of " << args->seconds << " s at "
              << args->sample_rate << " Hz (float32), initial parameters; " << threads
              << " threads; medians of " << args->repeats << " runs after a warm-up\n"
              << std::fixed << std::setprecision(1) << "  forward (no gradients)  " << std::setw(9)
              << f << " ms\n"
              << "  backward                " << std::setw(9) << b << " ms\n"
              << "  forward+backward        " << std::setw(9) << fb << " ms\n"
              << "  peak memory (f+b)       " << std::setw(13)
              << (std::isfinite(peak_mib) ? memory.str() : "unavailable") << "\n";
  });
}

}  // namespace grafx::cli
