#include <grafx/error.h>
#include <grafx/fit/thread_tuner.h>

#include <algorithm>
#include <string>

namespace grafx {

ThreadTuner::ThreadTuner(int max_threads, int64_t probe_every, double margin)
    : probe_every_(probe_every), margin_(margin) {
  if (max_threads < 1 || probe_every < 2 || !(margin >= 0 && margin < 1))
    throw FitError("grafx.fit.options",
                   "thread tuner: expected at least 1 thread, probes every 2 or more steps and "
                   "a margin in [0, 1), but got " +
                       std::to_string(max_threads) + ", " + std::to_string(probe_every) + " and " +
                       std::to_string(margin));
  for (int n = max_threads; n >= 1; n /= 2) ladder_.push_back(n);
  if (ladder_.back() != 1) ladder_.push_back(1);
}

int ThreadTuner::threads_for(int64_t step) {
  if (ladder_.size() < 2 || step % probe_every_ != probe_every_ - 1) return current();
  const bool has_lower = position_ + 1 < ladder_.size(), has_higher = position_ > 0;
  const bool lower = has_lower && (probe_lower_ || !has_higher);
  probe_lower_     = !lower;  // the other side next time, where there is one
  return ladder_[lower ? position_ + 1 : position_ - 1];
}

void ThreadTuner::record(int threads, double seconds) {
  std::deque<double>& times = recent_[threads];
  times.push_back(seconds);
  if (times.size() > 5) times.pop_front();
  if (threads == current()) return;
  std::vector<double> sorted(recent_[current()].begin(), recent_[current()].end());
  if (sorted.empty()) return;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  auto rung           = std::find(ladder_.begin(), ladder_.end(), threads);
  if (rung != ladder_.end() && seconds < (1 - margin_) * median) {
    position_ = size_t(rung - ladder_.begin());
    recent_[threads].clear();  // the new count's history starts now
    recent_[threads].push_back(seconds);
  }
}

}  // namespace grafx
