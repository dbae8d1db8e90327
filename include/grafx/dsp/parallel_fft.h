#pragma once
/// Real FFTs of many rows on every CPU thread. ATen's CPU FFT (pocketfft) transforms a whole
/// batch on one thread; these split the rows of the last dimension across LibTorch's threads,
/// one pocketfft call per share, with results bit-identical to the plain call
/// (docs/benchmarks.md, "Both cores"). They do so only where nothing records a graph (inside
/// autograd Functions, outside create_graph), on the CPU and without tangents; elsewhere they
/// are the plain call.
///
///   at::Tensor spectra = rfft_rows(frames, 4096);   // frames [..., 4096] -> [..., 2049]
#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace grafx::dsp {

/// One call of rfft_rows or irfft_rows: `rows` transforms of size `size`.
struct FftRecord {
  int64_t size = 0, rows = 0;
  bool inverse = false;
};

/// Records every rfft_rows and irfft_rows call, on any thread, while it lives (one at a time):
/// the FFTs a piece of work did, for the roofline of docs/benchmarks.md (bench/roofline_bench).
/// Make and destroy it around work that has ended, not while other threads still transform.
///
///   FftLedger ledger;  run();  for (const FftRecord& r : ledger.records()) ...
class FftLedger {
 public:
  FftLedger();
  ~FftLedger();
  FftLedger(const FftLedger&)            = delete;
  FftLedger& operator=(const FftLedger&) = delete;
  std::vector<FftRecord> records() const;

  struct State;  // the records and their lock

 private:
  std::shared_ptr<State> state_;
};

/// at::fft_rfft(x, n, -1).
at::Tensor rfft_rows(const at::Tensor& x, int64_t n);
/// at::fft_irfft(x, n, -1).
at::Tensor irfft_rows(const at::Tensor& x, int64_t n);

/// at::fft_rfft(x, n, -1) (x cut or zero-padded to n samples) as a differentiable operation whose
/// passes both split their rows: the backward pass is one irfft of the gradient, where ATen's
/// zero-pads it and runs a full complex FFT on one thread. With tangents (forward mode) it is
/// ATen's call; a backward pass that is itself recorded (create_graph) records ATen's calls.
at::Tensor rfft(const at::Tensor& x, int64_t n);
/// at::fft_irfft(x, n, -1) (the first n/2 + 1 bins of x, zero-padded if fewer) as a
/// differentiable operation in the same way: its backward pass is one rfft.
at::Tensor irfft(const at::Tensor& x, int64_t n);

}  // namespace grafx::dsp
