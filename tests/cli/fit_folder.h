#pragma once
// A fit folder for the tests of the commands that run one (grafx stream, grafx export-lv2).

#include <grafx/fit/fit_record.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>
#include <grafx/io/audio.h>
#include <grafx/io/parameter_file.h>
#include <grafx/render/parameters.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <filesystem>

namespace grafx::testing {

/// A fit folder as grafx fit leaves it: a 3-track console with EQs on tracks and the group (two
/// zero-phase filters in series), dynamics, a delay and a reverb, its parameters and its record;
/// `automated`: with the gain/pans' gains on curves (a point every 50 ms over the second).
struct FitFolder {
  static constexpr SampleRate kRate = 16000;
  TempDir dir;
  std::string folder = dir.file("fit");
  std::vector<std::string> tracks;
  explicit FitFolder(bool automated = false) {
    std::filesystem::create_directory(folder);
    ConsoleOptions options;
    options.n_tracks     = 3;
    options.track_groups = {0, 0, 0};
    options.chain        = {"eq", "compressor", "gain_pan", "delay", "reverb"};
    options.dry_wet      = true;
    Graph graph          = build_console(options, registry_node_types()).graph;
    if (automated) {
      for (NodeId id : graph.nodes_of_type("gain_pan")) graph.set_automated(id, "log_gain");
      graph.set_automation({20.0, 21});
    }
    save_graph(graph, folder + "/console.json");
    const Processors processors = make_processors(graph.types(), {kRate});
    Parameters parameters       = create_parameters(graph, processors, {1, at::kFloat, false});
    if (automated) parameters = with_curves(graph, processors, parameters);
    at::manual_seed(2);
    for (auto& [type, values] : parameters)  // curves move more
      for (const auto& [name, t] : values.named())
        values[name] = t + (automated_parameter(name).empty() ? 0.3 : 1.0) * at::randn_like(t);
    save_parameters(folder + "/parameters.safetensors", graph, parameters, false, kRate);
    FitInputs inputs;
    for (int k = 0; k < 3; ++k) {
      tracks.push_back(dir.file("track" + std::to_string(k) + ".wav"));
      write_audio(tracks.back(), 0.3 * at::randn({2, kRate}), kRate);
    }
    inputs.tracks      = tracks;
    inputs.mix         = tracks.front();
    inputs.sample_rate = kRate;
    write_fit_record(folder, inputs, FitOptions(), false);
  }
};

}  // namespace grafx::testing
