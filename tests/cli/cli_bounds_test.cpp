// Issue 29's bounds: thread counts are capped at what the machine runs, and numbers too large
// for what they set are refused with one coded line.

#include "support/test_support.h"

#include <thread>

namespace grafx {
namespace {

using testing::contains;
using testing::run_grafx;

TEST(CliBounds, ThreadsAreCappedAtFourPerCoreWithANote) {
  // 1,024 threads on 2 cores took minutes for a second's work.
  testing::TempDir dir;
  const std::string graph = dir.file("c.json");
  ASSERT_EQ(run_grafx({"console", "--tracks", "1", "--chain", "g", "-o", graph}).exit_code, 0);
  const int cores        = int(std::max(1u, std::thread::hardware_concurrency()));
  const std::string note = "grafx: note: 1024 threads asked for, but this machine has " +
                           std::to_string(cores) + " core" + (cores == 1 ? "" : "s") + ": using " +
                           std::to_string(4 * cores);
  for (const auto& r : {run_grafx({"--threads", "1024", "info", graph}),
                        run_grafx({"info", graph}, {{"GRAFX_THREADS", "1024"}})}) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.err, note)) << r.err;
  }
  auto r = run_grafx({"--threads", std::to_string(cores), "info", graph});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(contains(r.err, "note")) << "a count the machine runs is taken as it is";
}

TEST(CliBounds, AnInputLimitBeyondWhatBytesCountIsRefused) {
  // 1e300 MiB overflowed the limit in bytes to 0, refusing every file as "larger than 0 MiB".
  testing::TempDir dir;
  const std::string graph = dir.file("c.json");
  ASSERT_EQ(run_grafx({"console", "--tracks", "1", "--chain", "g", "-o", graph}).exit_code, 0);
  for (const std::string mb : {"1e300", "1e13", "1.7e308"}) {
    auto r = run_grafx({"--max-input-mb", mb, "info", graph});
    EXPECT_EQ(r.exit_code, 2) << mb << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "[grafx.cli.arguments]")) << r.err;
    EXPECT_TRUE(contains(r.err, "expected at most 1099511627776 MiB (1 EiB)")) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  auto r = run_grafx({"--max-input-mb", "1e12", "info", graph});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(CliBounds, HugeNumbersGiveOneCodedLineAndLeaveNoFolder) {
  // --lr 1e100 printed LibTorch's "value cannot be converted to type float without overflow" and
  // left an empty folder; 1e308 blamed a NaN parameter; --skip 1e300 overflowed to a negative
  // sample count.
  testing::TempDir dir;
  const std::string data = testing::testdata_dir();
  for (const std::string lr : {"1e100", "1e308", "11"}) {
    const std::string folder = dir.file("fit" + lr);
    auto r =
        run_grafx({"fit", "--tracks", data + "/bass.flac", data + "/drums.flac", "--mix",
                   data + "/guitar.flac", "-o", folder, "--lr", lr, "--steps", "2", "--crop", "3"});
    EXPECT_EQ(r.exit_code, 2) << r.err;  // refused with the arguments (fit_settings.h)
    EXPECT_TRUE(contains(r.err,
                         "grafx: error: [grafx.cli.arguments] --lr: expected a finite learning "
                         "rate above 0 and at most 10, but got "))
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(testing::file_exists(folder)) << "nothing made";
  }
  auto r = run_grafx({"fit", "--tracks", data + "/bass.flac", "--mix", data + "/guitar.flac", "-o",
                      dir.file("budget"), "--time-budget", "1e308"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "grafx: error: [grafx.cli.arguments] --time-budget: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "expected at most 1e9 minutes, but got \"1e308\"")) << r.err;
  EXPECT_FALSE(testing::file_exists(dir.file("budget")));
  for (const std::string skip : {"1e300", "1e15"}) {
    auto r =
        run_grafx({"loss", data + "/guitar.flac", data + "/guitar.flac", "--skip", skip, "--json"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "grafx: error: [grafx.loss.skip] ")) << r.err;
    EXPECT_FALSE(contains(r.err, "-9223372036854775808")) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace grafx
