#pragma once
// Helpers of the library's CPU loops (private to the library: dsp, the processors and the
// losses): rows in parallel groups, blocks of samples in parallel, CPU copies.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cstdint>

namespace grafx::dsp {

// A recursion is a chain of dependent multiply-adds, bound by their latency; interleaving
// independent rows keeps several chains in flight at once (2–3× faster than row by row here).
// More than 4 rows is slower when rows are a power of two apart in memory (as 2^17-sample
// signals are): their samples then compete for the same cache sets.
constexpr int64_t kInterleavedRows = 4;

/// Calls step(group, first, count) for the groups [first, first + count) of `size` of n
/// items (the last one shorter), in parallel, recording no autograd graph on any thread (the
/// grad mode is per thread, and workers start with their own). Groups are fixed by index, so
/// results do not depend on the number of threads. They are dealt to the threads in turn
/// (thread t takes groups t, t + T, …): contiguous ranges gave one of two threads two of three
/// groups (five tracks in groups of two: four tracks against one).
template <typename Step>
void for_groups(int64_t n, int64_t size, const Step& step) {
  const int64_t n_groups  = (n + size - 1) / size;
  const int64_t n_threads = std::min<int64_t>(at::get_num_threads(), n_groups);
  at::parallel_for(0, n_threads, 1, [&](int64_t begin, int64_t end) {
    c10::NoGradGuard no_grad;
    for (int64_t t = begin; t < end; ++t)
      for (int64_t g = t; g < n_groups; g += n_threads)
        step(g, g * size, std::min(size, n - g * size));
  });
}

/// Calls step(first_row, n_rows) for groups of up to kInterleavedRows rows, in parallel.
template <typename Step>
void for_row_groups(int64_t n_rows, const Step& step) {
  for_groups(n_rows, kInterleavedRows,
             [&](int64_t, int64_t first, int64_t count) { step(first, count); });
}

/// y[n] = a·y[n∓1] + x[n] over rows of length L; `a` has one value per row or per sample. y may
/// be x (each sample is read before it is written).
template <typename T, bool kVarying, bool kReverse>
void recurrence_rows(const T* x, const T* a, const T* initial, T* y, int64_t n_rows,
                     int64_t length) {
  for_row_groups(n_rows, [&](int64_t first, int64_t count) {
    T state[kInterleavedRows];
    for (int64_t j = 0; j < count; ++j) state[j] = initial[first + j];
    const T* xg = x + first * length;
    const T* ag = a + first * (kVarying ? length : 1);
    T* yg       = y + first * length;
    for (int64_t i = 0; i < length; ++i) {
      int64_t n = kReverse ? length - 1 - i : i;
      for (int64_t j = 0; j < count; ++j) {
        T coefficient      = kVarying ? ag[j * length + n] : ag[j];
        state[j]           = coefficient * state[j] + xg[j * length + n];
        yg[j * length + n] = state[j];
      }
    }
  });
}

/// Samples per task of for_sample_blocks: every thread busy even for one item.
constexpr int64_t kSampleBlock = 16384;

/// The tasks for_sample_blocks makes of `items` rows of `length` samples.
inline int64_t sample_block_tasks(int64_t items, int64_t length) {
  return items * ((length + kSampleBlock - 1) / kSampleBlock);
}

/// Calls work(task, item, first, end) for blocks [first, end) of kSampleBlock samples of every
/// item, in parallel. Tasks are numbered item by item, block by block: partial sums kept per
/// task and added in task order are the same on any number of threads.
template <typename Work>
void for_sample_blocks(int64_t items, int64_t length, const Work& work) {
  const int64_t blocks = (length + kSampleBlock - 1) / kSampleBlock;
  at::parallel_for(0, items * blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t item = task / blocks, first = (task % blocks) * kSampleBlock;
      work(task, item, first, std::min(length, first + kSampleBlock));
    }
  });
}

/// Runs `kernel(y)` on a CPU tensor y shaped like x, returning y on x's device.
template <typename Kernel>
at::Tensor on_cpu(const at::Tensor& x, Kernel kernel) {
  at::Tensor y = at::empty(x.sizes(), x.options().device(at::kCPU));
  kernel(y);
  return y.to(x.device());
}

/// A contiguous CPU copy (or the tensor itself when it already is one).
inline at::Tensor cpu(const at::Tensor& t) { return t.to(at::kCPU).contiguous(); }

}  // namespace grafx::dsp
