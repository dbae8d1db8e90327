#include <grafx/dsp/convolution.h>

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

namespace grafx::dsp {
namespace {

// Transforms larger than this run out of the CPU caches and cost more per n·log2(n); both the
// size and the factor are measured by bench/dsp_bench.cpp (docs/benchmarks.md).
constexpr int64_t kCacheFriendlySize = int64_t(1) << 17;
constexpr double kLargeTransformFactor = 1.6;

double transform_cost(int64_t n) {
  double cost = double(n) * std::log2(double(n));
  return n > kCacheFriendlySize ? cost * kLargeTransformFactor : cost;
}

/// Index of the full convolution that becomes output sample 0.
int64_t output_shift(int64_t filter_length, ConvolutionMode mode) {
  return mode == ConvolutionMode::zero_phase ? filter_length / 2 : 0;
}

/// The whole-signal transform size: outputs [s, s + L_out) of the circular convolution must
/// receive no wrapped-around samples of the full convolution (support [0, L + K − 1)).
int64_t whole_signal_fft_size(int64_t signal_length, int64_t filter_length, ConvolutionMode mode) {
  int64_t shift = output_shift(filter_length, mode);
  int64_t needed = std::max(signal_length + filter_length - 1 - shift,
                            shift + output_length(signal_length, filter_length, mode));
  return fast_fft_size(needed);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The cheapest overlap-save plan with blocks from 2K up to (not including) `max_size`; its
/// cost is infinite when there is no such block size.
ConvolutionPlan best_block_plan(int64_t n_outputs, int64_t filter_length, int64_t max_size) {
  ConvolutionPlan best{true, 0, 0, std::numeric_limits<double>::infinity()};
  for (int64_t size = fast_fft_size(2 * filter_length); size < max_size; size = fast_fft_size(size + 1)) {
    int64_t n_blocks = ceil_div(n_outputs, size - filter_length + 1);
    double cost = double(2 * n_blocks + 1) * transform_cost(size);  // rfft + irfft per block, filter
    if (cost < best.cost) best = {true, size, n_blocks, cost};
  }
  return best;
}

void check_arguments(const at::Tensor& x, const at::Tensor& h, const char* where) {
  TORCH_CHECK(x.dim() == 3 && h.dim() == 3, where, ": expected x N×C×L and h N×C×K, but got x ",
              x.sizes(), " and h ", h.sizes());
  TORCH_CHECK(x.scalar_type() == h.scalar_type() && at::isFloatingType(x.scalar_type()), where,
              ": expected x and h of one floating dtype, but got ", x.scalar_type(), " and ",
              h.scalar_type());
  TORCH_CHECK(h.size(0) == 1 || h.size(0) == x.size(0), where, ": expected h with 1 or ",
              x.size(0), " items, but got ", h.size(0));
  TORCH_CHECK(h.size(1) == 1 || h.size(1) == x.size(1), where, ": expected h with 1 or ",
              x.size(1), " channels, but got ", h.size(1));
  TORCH_CHECK(x.size(2) > 0 && h.size(2) > 0, where, ": expected non-empty signals and filters");
}

/// Broadcast N and C of x and h.
std::vector<int64_t> output_shape(const at::Tensor& x, const at::Tensor& h, int64_t length) {
  return {std::max(x.size(0), h.size(0)), std::max(x.size(1), h.size(1)), length};
}

}  // namespace

int64_t fast_fft_size(int64_t n) {
  TORCH_CHECK(n > 0 && n < (int64_t(1) << 52), "fast_fft_size: expected a positive size, but got ", n);
  int64_t best = std::numeric_limits<int64_t>::max();
  for (int64_t p5 = 1; p5 < best; p5 *= 5)
    for (int64_t p35 = p5; p35 < best; p35 *= 3) {
      int64_t size = 2 * p35;  // even: pocketfft's real transforms are fastest on even sizes
      while (size < n) size *= 2;
      best = std::min(best, size);
    }
  return best;
}

int64_t output_length(int64_t signal_length, int64_t filter_length, ConvolutionMode mode) {
  return mode == ConvolutionMode::full ? signal_length + filter_length - 1 : signal_length;
}

ConvolutionPlan plan_convolution(int64_t signal_length, int64_t filter_length, ConvolutionMode mode) {
  int64_t whole = whole_signal_fft_size(signal_length, filter_length, mode);
  ConvolutionPlan whole_plan{false, whole, 1, 3 * transform_cost(whole)};  // rfft x and h, irfft
  ConvolutionPlan block_plan =
      best_block_plan(output_length(signal_length, filter_length, mode), filter_length, whole);
  return block_plan.cost < whole_plan.cost ? block_plan : whole_plan;
}

at::Tensor fft_convolve(const at::Tensor& x, const at::Tensor& h, ConvolutionMode mode) {
  check_arguments(x, h, "fft_convolve");
  int64_t length = x.size(2), taps = h.size(2);
  int64_t n = whole_signal_fft_size(length, taps, mode);
  at::Tensor spectrum = at::fft_rfft(x, n, -1) * at::fft_rfft(h, n, -1);
  return at::fft_irfft(spectrum, n, -1).narrow(-1, output_shift(taps, mode), output_length(length, taps, mode));
}

at::Tensor block_convolve(const at::Tensor& x, const at::Tensor& h, ConvolutionMode mode, int64_t fft_size) {
  check_arguments(x, h, "block_convolve");
  int64_t length = x.size(2), taps = h.size(2);
  int64_t n_outputs = output_length(length, taps, mode), shift = output_shift(taps, mode);
  if (fft_size == 0) {
    int64_t whole = whole_signal_fft_size(length, taps, mode);
    fft_size = best_block_plan(n_outputs, taps, std::max(whole, fast_fft_size(2 * taps) + 1)).fft_size;
  }
  TORCH_CHECK(fft_size >= taps, "block_convolve: expected blocks of at least the filter length ", taps,
              ", but got ", fft_size);
  // Overlap-save: block b holds the inputs of outputs [b·hop, (b + 1)·hop) and K − 1 samples of
  // history; the first K − 1 samples of its circular convolution wrap around and are dropped.
  int64_t hop = fft_size - taps + 1, n_blocks = ceil_div(n_outputs, hop);
  int64_t left = taps - 1 - shift, right = n_blocks * hop + taps - 1 - left - length;
  at::Tensor blocks = at::constant_pad_nd(x, {left, right}).unfold(-1, fft_size, hop);
  at::Tensor spectrum = at::fft_rfft(blocks, fft_size, -1) * at::fft_rfft(h, fft_size, -1).unsqueeze(-2);
  at::Tensor y = at::fft_irfft(spectrum, fft_size, -1).narrow(-1, taps - 1, hop);
  return y.reshape(output_shape(x, h, n_blocks * hop)).narrow(-1, 0, n_outputs);
}

at::Tensor convolve(const at::Tensor& x, const at::Tensor& h, ConvolutionMode mode) {
  check_arguments(x, h, "convolve");
  ConvolutionPlan plan = plan_convolution(x.size(2), h.size(2), mode);
  return plan.block ? block_convolve(x, h, mode, plan.fft_size) : fft_convolve(x, h, mode);
}

}  // namespace grafx::dsp
