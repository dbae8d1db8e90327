// The hostile-input suite: every command with the values a hostile user would give (NaN,
// infinity, 0, negative and huge numbers, malformed text) and the files (empty, a folder,
// /dev/null, /dev/zero, missing). Each must end with one line naming an error code, an exit code
// from 1 to 127, and the folder exactly as it was: no file changed, none created or left behind.

#include <grafx/io/audio.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

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
       "--steps"},
      {{"fit", "--tracks", f("s.wav"), "--mix", f("s.wav"), "--seed", "-1", "-o", f("out")},
       "--seed: expected a whole number of at least 0"},
      {{"fit", "--tracks", f("s.wav"), "--mix", f("s.wav"), "--lr", "inf", "-o", f("out")},
       "--lr: expected a finite number above 0"},
      {{"fit", "--tracks", f("s.wav"), "--mix", f("s.wav"), "--sample-rate", "1e9", "-o", f("out")},
       "--sample-rate"},
      {{"fit", "--tracks", f("s.wav"), "--mix", f("s.wav"), "--crop", "-1", "-o", f("out")},
       "--crop"},
      {{"demo", "--steps", "nan", "-o", f("out")}, "--steps"},
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

}  // namespace
}  // namespace grafx
