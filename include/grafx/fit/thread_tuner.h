#pragma once
/// Choosing how many CPU threads a fit's steps use, by timing them.
///
/// On a machine shared with another busy process, a step on every core can be several times
/// slower than on fewer: LibTorch's OpenMP threads spin at each barrier waiting for a thread
/// whose core the other process holds (docs/benchmarks.md, "Fitting on a shared machine"). The
/// load changes while a fit runs, so the count is measured, not guessed: the tuner keeps a
/// current count from the ladder max, max/2, ..., 1 and every `probe_every` steps runs one step
/// at a neighbouring count (the next lower and the next higher in turn). It moves there when
/// that step took less than (1 − margin) times the median of the current count's last 5 steps.
///
///   ThreadTuner tuner(at::get_num_threads());
///   int n = tuner.threads_for(step);       // set it, run the step, then
///   tuner.record(n, seconds);

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

namespace grafx {

class ThreadTuner {
 public:
  explicit ThreadTuner(int max_threads, int64_t probe_every = 16, double margin = 0.1);

  /// The thread count for step `step` (0-based): the current count, or a neighbour on a probe.
  int threads_for(int64_t step);
  /// The time a step took with `threads` threads.
  void record(int threads, double seconds);
  /// The count the tuner currently prefers.
  int current() const { return ladder_[position_]; }
  /// max, max/2, ..., 1 (without repeats).
  const std::vector<int>& ladder() const { return ladder_; }

 private:
  std::vector<int> ladder_;
  size_t position_ = 0;  // of the current count in the ladder
  int64_t probe_every_;
  double margin_;
  bool probe_lower_ = true;                   // which neighbour the next probe tries
  std::map<int, std::deque<double>> recent_;  // last step times per count
};

}  // namespace grafx
