// The thread tuner, fed step times as a machine would give them.

#include <grafx/fit/thread_tuner.h>

#include "support/test_support.h"

namespace grafx {
namespace {

/// Runs `steps` steps whose time depends on the thread count; returns the counts used.
std::vector<int> simulate(ThreadTuner& tuner, int64_t first, int64_t steps,
                          const std::function<double(int)>& seconds) {
  std::vector<int> used;
  for (int64_t s = first; s < first + steps; ++s) {
    const int n = tuner.threads_for(s);
    tuner.record(n, seconds(n));
    used.push_back(n);
  }
  return used;
}

TEST(ThreadTuner, LadderHalvesDownToOne) {
  EXPECT_EQ(ThreadTuner(16).ladder(), (std::vector<int>{16, 8, 4, 2, 1}));
  EXPECT_EQ(ThreadTuner(6).ladder(), (std::vector<int>{6, 3, 1}));
  EXPECT_EQ(ThreadTuner(1).ladder(), (std::vector<int>{1}));
  EXPECT_GRAFX_ERROR(ThreadTuner(0), "grafx.fit.options", "at least 1 thread");
}

TEST(ThreadTuner, KeepsEveryCoreOnAQuietMachineAndProbesRarely) {
  ThreadTuner tuner(2, 16);
  // Quiet: 2 threads 0.34 s, 1 thread 0.45 s (this machine's fit step).
  std::vector<int> used = simulate(tuner, 0, 64, [](int n) { return n == 2 ? 0.34 : 0.45; });
  EXPECT_EQ(tuner.current(), 2);
  EXPECT_EQ(std::count(used.begin(), used.end(), 1), 4) << "one probe every 16 steps";
  EXPECT_EQ(used[15], 1);
  EXPECT_EQ(used[14], 2);
}

TEST(ThreadTuner, FollowsTheLoadDownAndBackUp) {
  ThreadTuner tuner(2, 16);
  simulate(tuner, 0, 20, [](int n) { return n == 2 ? 0.34 : 0.45; });
  EXPECT_EQ(tuner.current(), 2);
  // Another busy process arrives: two threads now take 1 s (spinning at barriers).
  simulate(tuner, 20, 16, [](int n) { return n == 2 ? 1.0 : 0.45; });
  EXPECT_EQ(tuner.current(), 1) << "the probe at step 31 found one thread faster";
  // It leaves: the next probe of two threads finds them faster again.
  std::vector<int> used = simulate(tuner, 36, 16, [](int n) { return n == 2 ? 0.34 : 0.45; });
  EXPECT_EQ(tuner.current(), 2);
  EXPECT_EQ(used.back(), 2);
}

TEST(ThreadTuner, ANoisyProbeWithinTheMarginDoesNotMove) {
  ThreadTuner tuner(4, 8, 0.1);
  // 2 threads only 5 % faster than 4: within the margin, the tuner stays.
  simulate(tuner, 0, 64, [](int n) { return n == 4 ? 1.0 : n == 2 ? 0.95 : 1.5; });
  EXPECT_EQ(tuner.current(), 4);
  // Probes alternate below and above, and the top of the ladder has no count above it.
  ThreadTuner middle(4, 2, 0.1);
  simulate(middle, 0, 2, [](int n) { return n == 2 ? 0.5 : 1.0; });  // moves to 2
  ASSERT_EQ(middle.current(), 2);
  EXPECT_EQ(middle.threads_for(2), 2) << "not a probe step";
  EXPECT_EQ(middle.threads_for(3), 4) << "the last probe went lower";
  EXPECT_EQ(middle.threads_for(5), 1);
}

}  // namespace
}  // namespace grafx
