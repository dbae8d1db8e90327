// The hostile-input suite: every command with the values a hostile user would give (NaN,
// infinity, 0, negative and huge numbers, malformed text) and the files (empty, a folder,
// /dev/null, /dev/zero, missing). Each must end with one line naming an error code, an exit code
// from 1 to 127, and the folder exactly as it was: no file changed, none created or left behind.

#include <grafx/io/audio.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

namespace grafx {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::run_grafx;

/// Every file under `root` with its contents.
std::map<std::string, std::string> snapshot(const std::string& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    files[entry.path().string()] =
        entry.is_regular_file() ? testing::read_file(entry.path().string()) : "<folder>";
  return files;
}

struct Case {
  std::vector<std::string> args;  // relative file names are made absolute below
  std::string message;            // part of the one-line error
};

TEST(CliHostile, EveryCommandRefusesHostileInputInOneLineAndChangesNothing) {
  testing::TempDir dir;
  auto f = [&](const std::string& name) { return dir.file(name); };
  ASSERT_EQ(run_grafx({"console", "--tracks", "2", "--chain", "g", "-o", f("g.json")}).exit_code,
            0);
  at::manual_seed(0);
  write_audio(f("s.wav"), at::randn({2, 16000 * 2}) * 0.1, 16000);
  testing::write_file(f("empty.json"), "");
  testing::write_file(f("empty.wav"), "");
  fs::create_directory(f("folder"));

  const std::string code        = "grafx: error: [grafx.";
  const std::vector<Case> cases = {
      // Numbers: NaN, infinity, 0, negative, huge, not a number.
      {{"console", "--tracks", "nan", "-o", f("x.json")}, "--tracks"},
      {{"console", "--tracks", "0", "-o", f("x.json")}, "--tracks"},
      {{"console", "--tracks", "1e9", "-o", f("x.json")}, "--tracks"},
      {{"console", "--groups", "nan", "-o", f("x.json")}, "--groups"},
      {{"console", "--prune-seed", "-1", "-o", f("x.json")}, "expected a whole number"},
      {{"render", f("g.json"), "--sources", f("s.wav"), f("s.wav"), "--channels", "0", "-o",
        f("x.wav")},
       "--channels"},
      {{"render", f("g.json"), "--sources", f("s.wav"), f("s.wav"), "--seed", "nan", "-o",
        f("x.wav")},
       "--seed"},
      {{"render", f("g.json"), "--sources", f("s.wav"), f("s.wav"), "--method", "bogus", "-o",
        f("x.wav")},
       "unknown schedule method"},
      {{"fit", "--tracks", f("s.wav"), "--mix", f("s.wav"), "--steps", "-1", "-o", f("out")},
       "--num-steps"},
      {{"fit", "--tracks", f("s.wav"), "--mix", f("s.wav"), "--seed", "-1", "-o", f("out")},
       "--seed: expected a whole number of at least 0"},
      {{"fit", "--tracks", f("s.wav"), "--mix", f("s.wav"), "--lr", "inf", "-o", f("out")},
       "--lr: expected a finite learning rate above 0"},
      {{"fit", "--tracks", f("s.wav"), "--mix", f("s.wav"), "--sample-rate", "1e9", "-o", f("out")},
       "--sample-rate"},
      {{"fit", "--tracks", f("s.wav"), "--mix", f("s.wav"), "--crop", "-1", "-o", f("out")},
       "--crop"},
      {{"demo", "--steps", "nan", "-o", f("out")}, "--num-steps"},
      {{"demo", "--song-seed", "-3", "-o", f("out")}, "--song-seed"},
      {{"schedule", f("g.json"), "--width", "0"}, "--width"},
      {{"schedule", f("g.json"), "--depth", "-1"}, "--depth"},
      {{"schedule", f("g.json"), "--budget", "nan"}, "--budget"},
      {{"process", "gain_pan", "-i", f("s.wav"), "-o", f("x.wav"), "--set", "gain_db=nan"},
       "is not a finite number"},
      {{"process", "gain_pan", "-i", f("s.wav"), "-o", f("x.wav"), "--set", "gain_db=1e400"},
       "gain_db"},
      {{"processors", "gain_pan", "--response", f("x.svg"), "--sample-rate", "0"}, "--sample-rate"},
      {{"--threads", "0", "info", f("g.json")}, "--threads"},
      {{"--max-input-mb", "-1", "info", f("g.json")}, "--max-input-mb"},
      {{"draw", f("g.json"), "-o", f("x.svg"), "--max-nodes", "0"}, "--max-nodes"},
      // Files: empty, a folder, devices, missing, endless.
      {{"info", f("empty.json")}, "empty.json"},
      {{"info", f("folder")}, "is a folder"},
      {{"info", "/dev/null"}, "/dev/null"},
      {{"--max-input-mb", "1", "info", "/dev/zero"}, "[grafx.io.too_large] /dev/zero"},
      {{"info", f("missing.json")}, "missing.json"},
      {{"draw", f("empty.json"), "-o", f("x.svg")}, "empty.json"},
      {{"render", f("g.json"), "--sources", f("empty.wav"), f("s.wav"), "-o", f("x.wav")},
       "empty.wav"},
      {{"render", f("g.json"), "--sources", f("folder"), f("s.wav"), "-o", f("x.wav")}, "folder"},
      {{"render", f("g.json"), "--sources", "/dev/null", f("s.wav"), "-o", f("x.wav")},
       "/dev/null"},
      {{"render", f("g.json"), "--sources", f("s.wav"), f("s.wav"), "--params", f("empty.json"),
        "-o", f("x.wav")},
       "empty.json"},
      {{"fit", "--tracks", f("empty.wav"), "--mix", f("s.wav"), "-o", f("out")}, "empty.wav"},
      {{"fit", "--tracks", f("s.wav"), "--mix", "/dev/zero", "-o", f("out")}, "/dev/zero"},
      {{"fit", "--graph", f("empty.json"), "--tracks", f("s.wav"), "--mix", f("s.wav"), "-o",
        f("out")},
       "empty.json"},
      {{"process", "gain_pan", "-i", f("folder"), "-o", f("x.wav")}, "folder"},
      // Outputs that would replace inputs, or land where they cannot.
      {{"process", "gain_pan", "-i", f("s.wav"), "-o", f("s.wav"), "--force"},
       "[grafx.io.overwrites_input]"},
      {{"draw", f("g.json"), "-o", f("g.json"), "--force"}, "[grafx.io.overwrites_input]"},
      {{"console", "-o", f("missing/x.json")}, "does not exist"},
      {{"console", "-o", f("g.json")}, "[grafx.io.exists]"},
      // Words where names are expected.
      {{"processors", "nosuch"}, "[grafx.processor.unknown]"},
      {{"console", "--chain", "e7", "-o", f("x.json")}, "chain letter '7'"},
      {{"console", "--send", "reverb", "-o", f("x.json")}, "--send"},
      {{"console", "--sidechain", "a=b", "-o", f("x.json")}, "no track is named"},
      {{"draw", f("g.json"), "-o", f("x.bmp")}, "unknown picture format"},
  };
  const auto before = snapshot(dir.path());
  for (const auto& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += " " + a;
    auto r = run_grafx(c.args);
    EXPECT_GE(r.exit_code, 1) << shown;
    EXPECT_LT(r.exit_code, 128) << shown;
    EXPECT_EQ(r.err.rfind(code, 0), 0u) << shown << ": " << r.err;
    EXPECT_TRUE(contains(r.err, c.message)) << shown << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << shown << ": " << r.err;
    EXPECT_EQ(snapshot(dir.path()), before) << shown << ": the folder changed";
  }
}

// ---- issue 29: reliability, round 3 -----------------------------------------------------------

/// A short 16 kHz song of two tracks (one mono) and its mix, for quick fits.
struct Song {
  testing::TempDir dir;
  Song() {
    at::manual_seed(29);
    write_audio(dir.file("a.wav"), at::randn({1, 16000 * 2}) * 0.1, 16000);
    write_audio(dir.file("b.wav"), at::randn({2, 16000 * 2}) * 0.1, 16000);
    write_audio(dir.file("mix.wav"), at::randn({2, 16000 * 2}) * 0.1, 16000);
  }
  /// `grafx fit` of the song into `out` with these settings added.
  std::vector<std::string> fit(const std::string& out, std::vector<std::string> extra = {}) const {
    std::vector<std::string> args = {"fit",
                                     "--tracks",
                                     dir.file("a.wav"),
                                     dir.file("b.wav"),
                                     "--mix",
                                     dir.file("mix.wav"),
                                     "--chain",
                                     "eg",
                                     "--sample-rate",
                                     "16000",
                                     "--crop",
                                     "1",
                                     "--warm-up",
                                     "0.2",
                                     "-o",
                                     out};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
};

/// Expects a one-line error naming `code` and `part`, exit 1.
void expect_error(const testing::CommandResult& r, const std::string& code,
                  const std::string& part) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "grafx: error: [" + code + "]")) << r.err;
  EXPECT_TRUE(contains(r.err, part)) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// Item 1: names were looked up (routing) before their count was checked: a segfault.
TEST(CliHostile, ConsoleWithFewerNamesThanTracksIsRefused) {
  testing::TempDir dir;
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, {"--send", "reverb=r@a"}, {"--sidechain", "a=b"}}) {
    std::vector<std::string> args = {"console", "--tracks",        "3", "--names", "a,b",
                                     "-o",      dir.file("x.json")};
    args.insert(args.end(), extra.begin(), extra.end());
    expect_error(run_grafx(args), "grafx.graph.invalid_console",
                 "expected 3 track names, but got 2");
  }
  expect_error(run_grafx({"console", "--tracks", "2", "--names", "a,b,c", "--sidechain", "a=c",
                          "-o", dir.file("x.json")}),
               "grafx.graph.invalid_console", "expected 2 track names, but got 3");
  EXPECT_FALSE(testing::file_exists(dir.file("x.json")));
}

// Issue 59's minor items: binary data named as not a graph file; a time too small for a double
// is a time; a smoothness weight that would overflow the loss is refused.
TEST(CliHostile, MessagesSayWhatIsWrong) {
  testing::TempDir dir;
  testing::write_file(dir.file("binary.json"), std::string("RIFF\0\0\0\0WAVEfmt [[[[[[", 20));
  expect_error(run_grafx({"info", dir.file("binary.json")}), "grafx.io.format",
               "not a graph file (it holds binary data");
  write_audio(dir.file("a.wav"), 0.1 * at::randn({1, 8000}), 8000);
  auto r = run_grafx({"process", "gain_pan", "-i", dir.file("a.wav"), "-o", dir.file("b.wav"),
                      "--set", "gain_db=0@0,-20@1e-320,-10@1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_grafx({"fit", "--tracks", dir.file("a.wav"), "--mix", dir.file("a.wav"), "-o",
                 dir.file("fit"), "--automate", "gain_pan", "--automation-smoothness", "1e308"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "[grafx.cli.arguments] --automation-smoothness")) << r.err;
  EXPECT_TRUE(contains(r.err, "1000")) << r.err;
  EXPECT_FALSE(testing::file_exists(dir.file("fit")));
}

// Item 2: --types is an input; --force must not replace it.
TEST(CliHostile, TypesFileIsNeverReplaced) {
  const char* source = std::getenv("GRAFX_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  Song song;
  const std::string types =
      testing::read_file(std::string(source) + "/examples/channel_strips.json");
  testing::write_file(song.dir.file("T.json"), types);
  expect_error(run_grafx({"console", "--tracks", "2", "--types", song.dir.file("T.json"), "--chain",
                          "strip,g", "-o", song.dir.file("T.json"), "--force"}),
               "grafx.io.overwrites_input", "T.json");
  fs::create_directory(song.dir.file("D"));
  testing::write_file(song.dir.file("D/console.json"), types);
  std::vector<std::string> args = {"fit",
                                   "--tracks",
                                   song.dir.file("a.wav"),
                                   song.dir.file("b.wav"),
                                   "--mix",
                                   song.dir.file("mix.wav"),
                                   "--types",
                                   song.dir.file("D/console.json"),
                                   "--chain",
                                   "strip,g",
                                   "--sample-rate",
                                   "16000",
                                   "--crop",
                                   "1",
                                   "--warm-up",
                                   "0.2",
                                   "-o",
                                   song.dir.file("D"),
                                   "--force"};
  expect_error(run_grafx(args), "grafx.io.overwrites_input", "console.json");
  EXPECT_EQ(testing::read_file(song.dir.file("T.json")), types);
  EXPECT_EQ(testing::read_file(song.dir.file("D/console.json")), types);
}

// Item 4: libsamplerate made a mono file one sample shorter than a stereo one of the same length
// (88200 samples, 44.1 -> 16 kHz), so `render` refused the fit's own tracks.
TEST(CliHostile, MixedMonoAndStereoStemsFitThenRender) {
  testing::TempDir dir;
  at::manual_seed(4);
  write_audio(dir.file("a.wav"), at::randn({1, 88200}) * 0.1, 44100);
  write_audio(dir.file("b.wav"), at::randn({2, 88200}) * 0.1, 44100);
  write_audio(dir.file("mix.wav"), at::randn({2, 88200}) * 0.1, 44100);
  auto r = run_grafx({"fit", "--tracks", dir.file("a.wav"), dir.file("b.wav"), "--mix",
                      dir.file("mix.wav"), "--chain", "g", "--sample-rate", "16000", "--crop", "1",
                      "--warm-up", "0.2", "--steps", "1", "-o", dir.file("fit")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "longer than")) << "equal lengths stay equal: " << r.err;
  r = run_grafx({"render", dir.file("fit/console.json"), "--sources", dir.file("a.wav"),
                 dir.file("b.wav"), "--params", dir.file("fit/parameters.safetensors"), "-o",
                 dir.file("again.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_audio(dir.file("again.wav")).samples.size(1), 32000);
  EXPECT_EQ(read_audio(dir.file("fit/mix.wav")).samples.size(1), 32000);
}

// Item 5: a graph of two outputs was fitted on its first alone, silently.
TEST(CliHostile, FitOfAGraphWithTwoOutputsIsRefused) {
  Song song;
  testing::write_file(song.dir.file("two.json"), R"({
  "format": "grafx.graph", "version": 2,
  "nodes": [{"id": 0, "type": "in"}, {"id": 1, "type": "in"}, {"id": 2, "type": "gain_pan"},
            {"id": 3, "type": "gain_pan"}, {"id": 4, "type": "out"}, {"id": 5, "type": "out"}],
  "edges": [{"source": 0, "dest": 2}, {"source": 1, "dest": 3}, {"source": 2, "dest": 4},
            {"source": 3, "dest": 5}],
  "next_id": 6})");
  expect_error(
      run_grafx({"fit", "--graph", song.dir.file("two.json"), "--tracks", song.dir.file("a.wav"),
                 song.dir.file("b.wav"), "--mix", song.dir.file("mix.wav"), "--sample-rate",
                 "16000", "-o", song.dir.file("out")}),
      "grafx.fit.data", "one `out` node");
  EXPECT_FALSE(fs::exists(song.dir.file("out")));
}

// Item 6: finite but huge audio overflowed the spectra; `loss --json` printed nan (not JSON)
// and exited with 0.
TEST(CliHostile, LossOfHugeAudioIsAnError) {
  testing::TempDir dir;
  at::manual_seed(6);
  write_audio(dir.file("huge.wav"), at::randn({2, 16000 * 2}) * 1e30, 16000);
  write_audio(dir.file("mix.wav"), at::randn({2, 16000 * 2}) * 0.1, 16000);
  for (bool json : {true, false}) {
    std::vector<std::string> args = {"loss", dir.file("huge.wav"), dir.file("mix.wav"),
                                     "--sample-rate", "16000"};
    if (json) args.push_back("--json");
    auto r = run_grafx(args);
    expect_error(r, "grafx.loss.non_finite", "huge.wav");
    EXPECT_EQ(r.out, "") << "no partial result";
  }
  // A fit of such audio only skipped steps, then failed drawing its report in a half-written
  // folder: refused before the folder is made.
  write_audio(dir.file("huge_track.wav"), at::randn({1, 16000 * 2}) * 1e30, 16000);
  expect_error(run_grafx({"fit", "--tracks", dir.file("huge_track.wav"), "--mix",
                          dir.file("mix.wav"), "--chain", "g", "--sample-rate", "16000", "--crop",
                          "1", "--warm-up", "0.2", "--steps", "3", "-o", dir.file("fit")}),
               "grafx.fit.data", "expected a finite loss");
  EXPECT_FALSE(fs::exists(dir.file("fit")));
}

// Item 9: two commands writing one folder mixed their files. A command holding the folder's
// lock (here this test, as a running fit would) makes every other writer stop at once.
TEST(CliHostile, SecondWriterOfAFolderIsRefused) {
  Song song;
  auto r = run_grafx(song.fit(song.dir.file("fit"), {"--steps", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string out = song.dir.file("busy");
  fs::create_directory(out);
  const int fd = ::open(out.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  expect_error(run_grafx(song.fit(out, {"--steps", "1"})), "grafx.io.locked", out);
  expect_error(run_grafx(song.fit(out, {"--steps", "1", "--force"})), "grafx.io.locked", out);
  expect_error(run_grafx({"demo", "-o", out, "--steps", "1"}), "grafx.io.locked", out);
  expect_error(run_grafx({"prune", song.dir.file("fit"), "-o", out, "--rounds", "0"}),
               "grafx.io.locked", out);
  EXPECT_TRUE(fs::is_empty(out)) << "nothing written";
  ::close(fd);  // the writer ends: the folder is free again
  r = run_grafx(song.fit(out, {"--steps", "1"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Item 10: --resume took changed settings silently (only the optimizer's were compared).
TEST(CliHostile, ResumeRefusesEveryChangedSetting) {
  Song song;
  const std::string out = song.dir.file("fit");
  auto r                = run_grafx(song.fit(out, {"--steps", "2", "--clip", "5"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::pair<std::vector<std::string>, std::string>> changes = {
      {{"--clip", "1"}, "made with max_gradient_norm 5, but this fit uses 1"},
      {{}, "made with max_gradient_norm 5, but this fit uses 0"},
      {{"--clip", "5", "--lr-group", "eq=0.1"}, "lr.eq"},
      {{"--clip", "5", "--stage", "0.5:gain_pan"}, "stage.0.5"},
      {{"--clip", "5", "--gradient-hook", "2=stop"}, "gradient_hook.2"},
      {{"--clip", "5", "--reset-every", "5"}, "reset_optimizer_every"},
  };
  for (const auto& [extra, message] : changes) {
    std::vector<std::string> args = {"--steps", "3", "--resume"};
    args.insert(args.end(), extra.begin(), extra.end());
    expect_error(run_grafx(song.fit(out, args)), "grafx.fit.checkpoint", message);
  }
  r = run_grafx(song.fit(out, {"--steps", "3", "--resume", "--clip", "5"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "resuming at step 2 of 3")) << r.out;
}

// Item 11: `prune` read the fit's tracks again by path, whatever they held by then.
TEST(CliHostile, PruneRefusesTracksChangedSinceTheFit) {
  Song song;
  auto r = run_grafx(song.fit(song.dir.file("fit"), {"--steps", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string a = testing::read_file(song.dir.file("a.wav")),
                    b = testing::read_file(song.dir.file("b.wav"));
  auto prune          = [&] {
    return run_grafx(
                 {"prune", song.dir.file("fit"), "-o", song.dir.file("pruned"), "--rounds", "0", "--force"});
  };
  // Swapped: the tracks would feed each other's inputs.
  testing::write_file(song.dir.file("a.wav"), b);
  testing::write_file(song.dir.file("b.wav"), a);
  expect_error(prune(), "grafx.io.fit_folder", "swapped or reordered");
  // Edited.
  testing::write_file(song.dir.file("a.wav"), a);
  write_audio(song.dir.file("b.wav"), at::randn({2, 16000 * 2}) * 0.1, 16000, true);
  expect_error(prune(), "grafx.io.fit_folder", "b.wav changed since the fit");
  testing::write_file(song.dir.file("b.wav"), b);
  r = prune();
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Item 17: a command that failed late (here writing its results past a file-size limit, as on
// a full disk) left the folder or the files it had made, half-written.
TEST(CliHostile, FailingLateLeavesNothingItMade) {
  Song song;
  const std::vector<std::string> limited = {"prlimit", "--fsize=100000"};  // mix.wav: 256 kB
  const std::string fresh                = song.dir.file("fresh");
  auto r = run_grafx(song.fit(fresh, {"--steps", "2"}), {}, limited);
  expect_error(r, "grafx.io.unwritable", "file too large");
  EXPECT_FALSE(fs::exists(fresh)) << "the folder it made is removed";
  // In a folder that was there, only what it wrote goes; the user's files stay.
  const std::string kept = song.dir.file("kept");
  fs::create_directory(kept);
  testing::write_file(kept + "/notes.txt", "mine");
  r = run_grafx(song.fit(kept, {"--steps", "2"}), {}, limited);
  expect_error(r, "grafx.io.unwritable", "file too large");
  EXPECT_EQ(snapshot(kept), (std::map<std::string, std::string>{{kept + "/notes.txt", "mine"}}));
  // Of several files, the first is removed when a later one cannot be written (Graphviz ended
  // the whole program, silently, when it could not write a picture).
  r = run_grafx({"console", "--tracks", "8", "-o", kept + "/c.json", "--draw", kept + "/c.png"}, {},
                {"prlimit", "--fsize=40000"});  // c.json: 9 kB, c.png: 75 kB
  expect_error(r, "grafx.io.unwritable", "c.png: cannot write it: File too large");
  EXPECT_EQ(snapshot(kept), (std::map<std::string, std::string>{{kept + "/notes.txt", "mine"}}));
}

}  // namespace
}  // namespace grafx
