// grafx render: a graph file rendered on audio files.

#include "arguments.h"
#include "commands.h"
#include "console_options.h"
#include "graph_source.h"
#include "output_folder.h"
#include "stop_request.h"

#include <grafx/duration.h>
#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/fit/fit_record.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/io/audio.h>
#include <grafx/io/parameter_file.h>
#include <grafx/render/chunked.h>
#include <grafx/render/make_stream.h>
#include <grafx/render/parameters.h>

#include <ATen/ATen.h>

#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <random>

#include <unistd.h>

namespace grafx::cli {
namespace {

/// The sources as K×C×L at `sample_rate`: the files' own rate when 0 (then they must agree),
/// else every file resampled to it.
at::Tensor load_sources(const std::vector<std::string>& paths, int64_t channels, bool pad,
                        SampleRate& sample_rate) {
  std::vector<at::Tensor> sources;
  int64_t longest      = 0;
  const bool resampled = sample_rate > 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    Audio audio = read_audio(paths[i]);
    if (i == 0 && !resampled) sample_rate = audio.sample_rate;
    if (audio.sample_rate != sample_rate && !resampled)
      throw IoError("grafx.io.sample_rate", paths[i] + ": sample rate " +
                                                std::to_string(audio.sample_rate) +
                                                " Hz differs from " + paths[0] + " (" +
                                                std::to_string(sample_rate) + " Hz)");
    at::Tensor x = audio.sample_rate == sample_rate
                       ? audio.samples
                       : resample(audio.samples, audio.sample_rate, sample_rate, paths[i]);
    if (x.size(0) == 1 && channels > 1)
      x = x.expand({channels, x.size(1)});  // mono to every channel
    if (x.size(0) != channels)
      throw IoError("grafx.io.channels", paths[i] + ": " + std::to_string(x.size(0)) +
                                             " channels, but the graph is "
                                             "rendered with " +
                                             std::to_string(channels) +
                                             " (mono files are spread to all)");
    if (!sources.empty() && x.size(1) != sources.front().size(1) && !pad)
      throw IoError("grafx.io.length", paths[i] + ": " + std::to_string(x.size(1)) +
                                           " samples, but " + paths[0] + " has " +
                                           std::to_string(sources.front().size(1)) +
                                           " (use --pad to zero-pad the shorter files)");
    longest = std::max(longest, x.size(1));
    sources.push_back(x);
  }
  for (auto& x : sources) x = at::constant_pad_nd(x, {0, longest - x.size(1)});
  return at::stack(sources);
}

std::vector<std::string> output_paths(const std::string& path, int64_t n) {
  if (n == 1) return {path};
  std::filesystem::path p(path);
  std::vector<std::string> paths;
  for (int64_t i = 1; i <= n; ++i)
    paths.push_back(
        (p.parent_path() / (p.stem().string() + "." + std::to_string(i) + p.extension().string()))
            .string());
  return paths;
}

/// Writes output i of `rendered` ([n_out, C, L]) to `paths[i]`, warning of non-finite samples
/// (rendered only with --allow-non-finite) and of clipping in 16-bit PCM.
void write_outputs(const std::vector<std::string>& paths, const at::Tensor& rendered,
                   SampleRate sample_rate, bool pcm16, bool force) {
  for (size_t i = 0; i < paths.size(); ++i) {
    at::Tensor y = rendered[int64_t(i)];
    if (!all_finite(y))
      std::cerr << "grafx: warning: " << paths[i] << " holds non-finite samples\n";
    const double peak = y.abs().max().item<double>();
    if (pcm16 && peak > 1.0)
      std::cerr << "grafx: warning: " << paths[i] << " peaks at " << std::setprecision(3) << peak
                << " and is clipped in 16-bit PCM\n";
    write_audio(paths[i], y, sample_rate, force,
                pcm16 ? AudioEncoding::kPcm16 : AudioEncoding::kFloat32);
    note_written(paths[i]);
  }
}

}  // namespace

void add_render_command(CLI::App& app) {
  struct Args {
    std::string graph, parameters, method = "beam", output;
    std::vector<std::string> sources;
    int64_t channels = 2, seed = 0;
    bool pad = false, pcm16 = false, force = false, allow_non_finite = false;
  };
  auto args     = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("render", "Render a graph on audio files");
  cmd->add_option("graph", args->graph, "Graph file (.json)")->required();
  cmd->add_option("--sources", args->sources, "One audio file per `in` node, in node id order")
      ->required();
  cmd->add_option("--params", args->parameters,
                  "Parameter file (.safetensors); default: initial parameters");
  cmd->add_option("--seed", args->seed, "Seed of the initial parameters")
      ->capture_default_str()
      ->check(whole_number(0));
  cmd->add_option("--method", args->method, "Schedule: one-by-one, greedy, beam or optimal")
      ->capture_default_str();
  cmd->add_option("--channels", args->channels, "Channels to render with")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--pad", args->pad, "Zero-pad shorter sources to the longest");
  cmd->add_flag("--pcm16", args->pcm16, "Write 16-bit PCM instead of float");
  cmd->add_flag("--allow-non-finite", args->allow_non_finite,
                "Render NaN or infinite parameters and write non-finite output (with a warning) "
                "instead of refusing them");
  cmd->add_option("-o,--output", args->output,
                  "Output audio file (several `out` nodes: name.1.wav, ...)")
      ->required();
  add_force_flag(*cmd, args->force);
  cmd->callback([args] {
    auto start  = std::chrono::steady_clock::now();
    Graph graph = load_graph_file(args->graph);
    graph.check();
    int64_t n_inputs = graph.count_per_type()[NodeTypes::kIn];
    if (int64_t(args->sources.size()) != n_inputs)
      throw RenderError("grafx.render.sources",
                        args->graph + " has " + std::to_string(n_inputs) + " `in` nodes, but " +
                            std::to_string(args->sources.size()) + " source files were given");
    auto outputs = output_paths(args->output, graph.count_per_type()[NodeTypes::kOut]);
    std::vector<std::string> inputs = args->sources;
    inputs.push_back(args->graph);
    if (!args->parameters.empty()) inputs.push_back(args->parameters);
    for (const auto& path : outputs) {
      check_not_an_input(path, inputs);
      check_writable(path, args->force);
    }
    // Parameters made at one sample rate (a fit's) are rendered at that rate.
    ParameterFile file;
    if (!args->parameters.empty()) file = read_parameter_file(args->parameters, graph);
    SampleRate sample_rate = file.sample_rate;
    if (sample_rate > 0)
      std::cout << "rendering at " << sample_rate << " Hz, the rate " << args->parameters
                << " was made for (sources at other rates are resampled)\n";
    at::Tensor sources    = load_sources(args->sources, args->channels, args->pad, sample_rate);
    Processors processors = renderable_processors(graph, {sample_rate});  // as `grafx info`
    Parameters parameters =
        args->parameters.empty()
            ? create_parameters(graph, processors, {uint64_t(args->seed), at::kFloat, false})
            : file.parameters;
    ScheduleOptions schedule(parse_schedule_method(args->method));
    RenderPlan plan = make_render_plan(to_tensor(graph), schedule);
    ChunkOptions chunks;  // memory flat with the song's length, the result the same
    chunks.render.time                 = {sample_rate, 0};  // automation curves start at 0
    chunks.render.check_finite         = !args->allow_non_finite;
    chunks.render.check_finite_outputs = !args->allow_non_finite;
    at::Tensor rendered = render_in_chunks(plan, processors, parameters, sources, chunks);
    write_outputs(outputs, rendered, sample_rate, args->pcm16, args->force);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "rendered " << counted(int64_t(args->sources.size()), "source") << " ("
              << args->channels << " ch, " << sample_rate << " Hz, " << std::fixed
              << std::setprecision(2) << double(sources.size(2)) / double(sample_rate)
              << " s) through " << counted(graph.n_nodes(), "node") << " in "
              << counted(plan.n_calls(), "processor call") << " (" << to_string(plan.method)
              << ") in " << seconds << " s -> " << outputs.front()
              << (outputs.size() > 1 ? " ..." : "") << "\n";
  });
}

void add_stream_command(CLI::App& app) {
  struct Args {
    GraphSourceOptions what;
    std::string output;
    std::vector<std::string> tracks;
    int64_t block = 512, channels = 2;
    bool random_blocks = false, pad = false, pcm16 = false, force = false;
  };
  auto args     = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "stream", "Stream audio files through a graph block by block, as a plugin runs it");
  add_graph_source_options(*cmd, args->what);
  cmd->add_option("--tracks,--sources", args->tracks,
                  "One audio file per `in` node, in node id order (default for a fit folder: "
                  "the tracks it was fitted on)");
  cmd->add_option("--block", args->block, "Samples per block")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  cmd->add_flag("--random-blocks", args->random_blocks,
                "Blocks of random sizes from 1 to --block samples, as some hosts call plugins");
  cmd->add_option("--channels", args->channels, "Channels of every source")
      ->capture_default_str()
      ->check(CLI::Range(1, 8));
  cmd->add_flag("--pad", args->pad, "Zero-pad shorter sources to the longest");
  cmd->add_flag("--pcm16", args->pcm16, "Write 16-bit PCM instead of float");
  cmd->add_option("-o,--output", args->output,
                  "Output audio file (several `out` nodes: name.1.wav, ...)")
      ->required();
  add_force_flag(*cmd, args->force);
  cmd->callback([args] {
    const GraphSource source(args->what);
    const Graph& graph              = source.graph;
    std::vector<std::string> tracks = args->tracks.empty() ? source.tracks : args->tracks;
    if (tracks.empty())
      throw RenderError("grafx.render.sources",
                        "expected --tracks (one audio file per `in` node): " + args->what.source +
                            " records no tracks (a graph file, or a pruned console's folder)");
    const int64_t n_inputs = graph.count_per_type()[NodeTypes::kIn];
    if (int64_t(tracks.size()) != n_inputs)
      throw RenderError("grafx.render.sources", source.graph_path + " has " +
                                                    std::to_string(n_inputs) + " `in` nodes, but " +
                                                    std::to_string(tracks.size()) +
                                                    " track files were given");
    auto outputs = output_paths(args->output, graph.count_per_type()[NodeTypes::kOut]);
    std::vector<std::string> inputs = source.inputs();
    inputs.insert(inputs.end(), tracks.begin(), tracks.end());
    for (const auto& path : outputs) {
      check_not_an_input(path, inputs);
      check_writable(path, args->force);
    }
    SampleRate sample_rate = source.file.sample_rate;
    at::Tensor sources     = load_sources(tracks, args->channels, args->pad, sample_rate);
    Processors processors  = source.processors(sample_rate);
    Parameters parameters  = source.parameters(processors);
    Stream stream =
        make_stream(graph, processors, parameters, {sample_rate, args->block, args->channels});
    std::mt19937_64 random(uint64_t(args->what.seed));
    std::uniform_int_distribution<int64_t> sizes(1, args->block);
    const auto start         = std::chrono::steady_clock::now();
    auto seconds_since_start = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    double shown = 0;  // a live line on terminals, a few times a second
    StopRequest stop;  // Ctrl-C and SIGTERM end the stream between blocks, writing nothing
    auto progress = [&](int64_t done, int64_t total) {
      if (stop.requested())
        throw RenderError("grafx.stream.interrupted", "interrupted after " + std::to_string(done) +
                                                          " of " + std::to_string(total) +
                                                          " samples; nothing was written");
      const double elapsed = seconds_since_start();
      if (!::isatty(STDOUT_FILENO) || (elapsed - shown < 0.25 && done < total)) return;
      shown             = elapsed;
      const double rate = double(done) / double(sample_rate) / std::max(elapsed, 1e-9);
      std::cout << "\rstreaming " << std::fixed << std::setprecision(1)
                << double(done) / double(sample_rate) << " of "
                << double(total) / double(sample_rate) << " s  " << rate << "x real time  ETA "
                << format_duration(double(total - done) / double(sample_rate) / rate) << "   "
                << (done < total ? "" : "\n") << std::flush;
    };
    at::Tensor streamed = stream_through(
        stream, sources, [&] { return args->random_blocks ? sizes(random) : args->block; },
        progress);
    const double seconds      = seconds_since_start();
    const StreamStatus status = stream.status();
    // As `grafx render` refuses a render that is not finite: nothing is written.
    if (status.silenced_blocks > 0)
      throw RenderError("grafx.render.non_finite",
                        std::to_string(status.silenced_blocks) + " of " +
                            counted(status.blocks, "block") +
                            " held samples that are not finite (NaN or infinity: an input, or "
                            "a gain that overflows) and were silenced; nothing was written");
    write_outputs(outputs, streamed, sample_rate, args->pcm16, args->force);
    const double audio_seconds = double(sources.size(2)) / double(sample_rate);
    std::cout << "streamed " << counted(n_inputs, "source") << " (" << args->channels << " ch, "
              << sample_rate << " Hz, " << std::fixed << std::setprecision(2) << audio_seconds
              << " s) through " << counted(graph.n_nodes(), "node") << " in "
              << counted(status.blocks, "block") << " of " << (args->random_blocks ? "1 to " : "")
              << args->block << " samples, latency " << stream.latency_samples() << " samples ("
              << std::setprecision(1)
              << 1000.0 * double(stream.latency_samples()) / double(sample_rate)
              << " ms, removed), " << std::setprecision(2) << seconds << " s ("
              << std::setprecision(1) << audio_seconds / seconds << "x real time) -> "
              << outputs.front() << (outputs.size() > 1 ? " ..." : "") << "\n";
  });
}

}  // namespace grafx::cli
