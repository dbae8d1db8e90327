// What a person reads: options where they are expected, refusals that say what to do, counts in
// words, listings of what is there.

#include <grafx/io/audio.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

using testing::contains;
using testing::run_grafx;

TEST(CliMessages, ThreadsAfterTheCommandAsBefore) {
  testing::TempDir dir;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--threads", "1", "console", "--tracks", "2", "-o", dir.file("a.json")},
           {"console", "--tracks", "2", "-o", dir.file("b.json"), "--threads", "1"}}) {
    auto r = run_grafx(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_EQ(testing::read_file(dir.file("a.json")), testing::read_file(dir.file("b.json")));
  auto r = run_grafx({"console", "--tracks", "2", "-o", dir.file("c.json"), "--threads", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--threads")) << r.err;
}

TEST(CliMessages, AnUnknownCommandIsNamedWithTheCommands) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"foo"}, {"--threads", "2", "foo", "--tracks", "2"}, {"--max-input-mb=9", "foo"}}) {
    auto r = run_grafx(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(contains(r.err, "unknown command \"foo\"; the commands are console, info, draw"))
        << r.err;
  }
  auto r = run_grafx({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "subcommand is required")) << r.err;
}

TEST(CliMessages, VersionGoesBeforeTheCommand) {
  // After a command, --version ended the program with success and none of the command's work
  // (a dataset run took every song as fitted).
  auto r = run_grafx({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(contains(r.out, "grafx ")) << r.out;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"fit", "--tracks", "a.wav", "--mix", "b.wav", "-o", "x", "--version"},
           {"info", "--version", "g.json"}}) {
    r = run_grafx(args);
    EXPECT_EQ(r.exit_code, 2) << args.front();
    EXPECT_TRUE(contains(r.err, "[grafx.cli.arguments] --version is an option of grafx itself"))
        << r.err;
  }
}

TEST(CliMessages, CountsInWords) {
  testing::TempDir dir;
  auto r = run_grafx({"console", "--names", "kick,bass", "--groups", "1", "--send", "reverb=r",
                      "-o", dir.file("one.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "console: 2 tracks, 1 subgroup, 1 send bus, ")) << r.out;
  r = run_grafx({"console", "--tracks", "1", "--chain", "g", "-o", dir.file("tiny.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "console: 1 track, 0 subgroups, 4 nodes (1 processor), 3 edges"))
      << r.out;
}

TEST(CliMessages, InfoListsTheTypesPresent) {
  testing::TempDir dir;
  ASSERT_EQ(
      run_grafx({"console", "--tracks", "2", "--chain", "eg", "-o", dir.file("c.json")}).exit_code,
      0);
  auto r = run_grafx({"info", dir.file("c.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "  e  eq ")) << r.out;
  EXPECT_TRUE(contains(r.out, "  g  gain_pan ")) << r.out;
  EXPECT_FALSE(contains(r.out, "compressor")) << "a type with no node is not listed:\n" << r.out;
  EXPECT_FALSE(contains(r.out, "reverb")) << r.out;
}

TEST(CliMessages, EveryOverwriteRefusalNamesForce) {
  testing::TempDir dir;
  write_audio(dir.file("a.wav"), at::randn({1, 4000}) * 0.1, 8000);
  ASSERT_EQ(run_grafx({"console", "--tracks", "2", "-o", dir.file("c.json")}).exit_code, 0);
  const std::string taken = dir.file("taken");
  for (const char* name : {"taken.svg", "taken.wav", "taken.json"})
    testing::write_file(dir.file(name), "keep me");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"draw", dir.file("c.json"), "-o", taken + ".svg"},
           {"process", "eq", "-i", dir.file("a.wav"), "-o", taken + ".wav"},
           {"processors", "eq", "--response", taken + ".svg"},
           {"console", "--tracks", "2", "-o", taken + ".json"}}) {
    auto r = run_grafx(args);
    EXPECT_EQ(r.exit_code, 1) << args[0];
    EXPECT_TRUE(contains(r.err, "[grafx.io.exists]") && contains(r.err, "--force"))
        << args[0] << ": " << r.err;
  }
  for (const char* name : {"taken.svg", "taken.wav", "taken.json"})
    EXPECT_EQ(testing::read_file(dir.file(name)), "keep me") << name;
}

TEST(CliMessages, DemoRefusesAnEarlierResultBeforeItsWork) {
  testing::TempDir dir;
  testing::write_file(dir.file("report.html"), "an earlier demo");
  auto r = run_grafx({"demo", "-o", dir.path()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "[grafx.io.exists]") && contains(r.err, "--force")) << r.err;
  EXPECT_FALSE(contains(r.out, "synthesising")) << "refused only after its work:\n" << r.out;
  EXPECT_EQ(testing::read_file(dir.file("report.html")), "an earlier demo");
}

}  // namespace
}  // namespace grafx
