// grafx stream, run as a user would: what grafx render writes, from a graph file or a fit
// folder, and one clear error for what cannot stream.

#include <grafx/fit/fit_record.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>
#include <grafx/io/audio.h>
#include <grafx/io/parameter_file.h>
#include <grafx/render/parameters.h>

#include "cli/fit_folder.h"
#include "support/test_support.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace grafx {
namespace {

using testing::contains;
using testing::FitFolder;
using testing::run_grafx;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
std::string read_text(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

double relative_difference(const std::string& a, const std::string& b) {
  at::Tensor x = read_audio(a).samples, y = read_audio(b).samples;
  EXPECT_EQ(x.sizes(), y.sizes());
  return (x - y).abs().max().item<double>() / y.abs().max().item<double>();
}

TEST(CliStream, AFitFolderStreamsAsItRenders) {
  FitFolder f;
  std::vector<std::string> render = {
      "render", f.folder + "/console.json", "--params", f.folder + "/parameters.safetensors",
      "-o",     f.dir.file("rendered.wav"), "--sources"};
  render.insert(render.end(), f.tracks.begin(), f.tracks.end());
  auto r = run_grafx(render);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The fit folder's own tracks by default, fixed and random block sizes.
  r = run_grafx({"stream", f.folder, "-o", f.dir.file("streamed.wav"), "--block", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "streamed 3 sources (2 ch, 16000 Hz, 1.00 s) through")) << r.out;
  EXPECT_TRUE(contains(r.out, "of 64 samples, latency 2046 samples (127.9 ms, removed)")) << r.out;
  EXPECT_LE(relative_difference(f.dir.file("streamed.wav"), f.dir.file("rendered.wav")), 1e-5);
  std::vector<std::string> random = {"stream",          f.folder,  "-o",  f.dir.file("random.wav"),
                                     "--random-blocks", "--block", "700", "--tracks"};
  random.insert(random.end(), f.tracks.begin(), f.tracks.end());
  r = run_grafx(random);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(relative_difference(f.dir.file("random.wav"), f.dir.file("rendered.wav")), 1e-5);
}

TEST(CliStream, WhatCannotStreamIsRefusedInOneLine) {
  FitFolder f;
  auto expect_error = [](const testing::CommandResult& r, int exit_code, const std::string& code,
                         const std::string& part) {
    EXPECT_EQ(r.exit_code, exit_code) << r.err;
    EXPECT_TRUE(contains(r.err, "[" + code + "]")) << r.err;
    EXPECT_TRUE(contains(r.err, part)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  };
  const std::string out = f.dir.file("out.wav");
  expect_error(run_grafx({"stream", f.folder, "-o", out, "--block", "0"}), 2, "grafx.cli.arguments",
               "--block");
  expect_error(run_grafx({"stream", f.folder, "-o", out, "--block", "99999999"}), 2,
               "grafx.cli.arguments", "--block");
  // A waveshaper that removes the mean of the whole signal has no streaming form: the node is
  // named.
  Graph centred(registry_node_types());
  centred.add_type({"centred", {"main"}, {"main"}, "tanh_distortion", {{"remove_dc", true}}});
  const NodeId in = centred.add("in"), shaper = centred.add("centred", "bass.drive");
  centred.connect(in, shaper), centred.connect(shaper, centred.add("out"));
  save_graph(centred, f.dir.file("centred.json"));
  expect_error(
      run_grafx({"stream", f.dir.file("centred.json"), "-o", out, "--tracks", f.tracks.front()}), 1,
      "grafx.stream.unsupported", "remove_dc subtracts the mean");
  // A graph file needs its tracks; a fit folder without its parameters or with a corrupt file.
  expect_error(run_grafx({"stream", f.folder + "/console.json", "-o", out}), 1,
               "grafx.render.sources", "expected --tracks");
  std::filesystem::rename(f.folder + "/parameters.safetensors", f.dir.file("p.safetensors"));
  expect_error(run_grafx({"stream", f.folder, "-o", out}), 1, "grafx.io.unreadable",
               "parameters.safetensors: No such file");
  write_text(f.folder + "/parameters.safetensors", "not a safetensors file");
  expect_error(run_grafx({"stream", f.folder, "-o", out}), 1, "grafx.io.format",
               "parameters.safetensors");
  std::filesystem::rename(f.dir.file("p.safetensors"), f.folder + "/parameters.safetensors");
  // A sample that overflows the EQs' sums: `grafx render` refuses such a render, and so does
  // stream, with a true count of the blocks silenced (it wrote a damaged file with exit 0).
  at::Tensor loud = read_audio(f.tracks.front()).samples.clone();
  loud[0][100]    = 3e38f;
  write_audio(f.dir.file("loud.wav"), loud, FitFolder::kRate);
  expect_error(run_grafx({"stream", f.folder, "-o", out, "--tracks", f.dir.file("loud.wav"),
                          f.tracks[1], f.tracks[2]}),
               1, "grafx.render.non_finite", " blocks held samples that are not finite");
  EXPECT_FALSE(testing::file_exists(out));
  // An output that exists is kept without --force; nothing is written on an error.
  write_text(out, "keep me");
  expect_error(run_grafx({"stream", f.folder, "-o", out}), 1, "grafx.io.exists", out);
  EXPECT_EQ(read_text(out), "keep me");
}

// Ctrl-C stops a stream between blocks with one coded line, and nothing is written.
TEST(CliStream, AnInterruptedStreamWritesNothing) {
  testing::TempDir dir;
  ConsoleOptions reverb;
  reverb.n_tracks     = 1;
  reverb.track_groups = {0};
  reverb.chain        = {"reverb"};
  save_graph(build_console(reverb, registry_node_types()).graph, dir.file("g.json"));
  // Two minutes in blocks of one sample (seconds of work), interrupted once the stream has set
  // its handler: a fixed delay lost the race to a fast machine's finished stream.
  write_audio(dir.file("long.wav"), 0.1 * at::randn({1, 48000 * 120}), 48000);
  auto r = run_grafx({"stream", dir.file("g.json"), "--tracks", dir.file("long.wav"), "--block",
                      "1", "-o", dir.file("out.wav")},
                     {}, testing::signal_once_handled(SIGINT));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "grafx: error: [grafx.stream.interrupted] interrupted after"))
      << r.exit_code << " " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(testing::file_exists(dir.file("out.wav")));
}

}  // namespace
}  // namespace grafx
