#pragma once
/// Real-time convolution of one channel of streaming audio with a fixed FIR, without latency.
///
/// Each call to `process` takes the next n samples of the input x and returns the same n samples
/// of y[t] = Σ_k h[k]·x[t − k] (x before the first sample, or before a reset, is silence). The
/// output does not depend on how the stream is cut into calls. All memory is allocated by the
/// constructor: process() allocates nothing, locks nothing and throws nothing, so it may run on
/// an audio thread. It is not thread-safe: one convolver per channel and thread. (As for any
/// float DSP, a host whose signals decay into subnormal numbers should flush them to zero.)
///
/// The filter is split in time (non-uniform partitioned convolution, after Gardner 1995):
///
///   taps [0, H), H = 64                direct form, sample by sample
///   taps [s, s + c·B), B ≤ s           a "level": c partitions of B taps, by overlap-save FFTs
///
/// The levels follow one another from tap H on, each with partitions of the largest power of
/// two B ≤ s (at most 8192), s being the level's first tap, so sizes grow geometrically. A level
/// runs every B samples, when a block of B inputs is complete: one real FFT of the last 2B
/// inputs (kept for c blocks: a frequency-domain delay line), c spectral products, one inverse
/// FFT. Since s ≥ B, the block's contribution is needed from the next sample on only, so no
/// latency is added; the price is work in bursts at block boundaries (a small one every H
/// samples, every level at once every 8192). The number of partitions of each level is the
/// cheapest under a cost model (transforms against spectral products, measured) found by
/// dynamic programming; filters of up to 256 taps are direct form alone where that is cheaper
/// (up to about 120 taps). For example:
///
///   2,047 taps    64 direct, 3 × 64, 7 × 256
///   96,000 taps   64 direct, 7 × 64, 15 × 512, 11 × 8192
///
/// The FFTs are radix 4 (and 2) on split real and imaginary arrays in float, with twiddles
/// computed in double: the forward transform leaves its spectrum in bit-reversed order and the
/// inverse takes it so, which the spectral products do not mind, so no permutation is ever done.
/// The filter spectra are computed in double. Against a direct convolution in double, the error
/// is below 3e−7 of the output's peak for filters of up to 96,000 random taps and white noise.
///
///   StreamConvolver reverb(impulse_response, 512);
///   reverb.process(in, out, 512);  // in the audio callback, any 1 ≤ n ≤ 512 samples

#include <cstdint>
#include <vector>

namespace grafx::dsp {

class StreamConvolver {
 public:
  /// `taps`: h[0], h[1], … (at least one); `max_block`: the most samples one process() call
  /// may take (≥ 1). Throws std::invalid_argument otherwise.
  StreamConvolver(const std::vector<float>& taps, int64_t max_block);

  /// The next n samples (0 ≤ n ≤ max_block) of the input to the same samples of the output.
  /// `input` and `output` must not overlap.
  void process(const float* input, float* output, int64_t n) noexcept;

  /// Forgets the input so far: the next sample is convolved as if preceded by silence.
  void reset() noexcept;

  /// Number of taps.
  int64_t length() const { return length_; }
  int64_t max_block() const { return max_block_; }

 private:
  /// Partitions [offset + i·size, offset + (i + 1)·size), i < count, of the filter.
  struct Level {
    int64_t size   = 0;
    int64_t count  = 0;
    int64_t offset = 0;
    int64_t newest = 0;          ///< slot of `inputs` holding the newest input spectrum
    std::vector<float> filters;  ///< count spectra of 2·size floats (size real, size imaginary)
    std::vector<float> inputs;   ///< the last count input spectra, a ring of slots, same layout
  };

  void run_level(Level& level) noexcept;

  int64_t length_    = 0;
  int64_t max_block_ = 0;
  int64_t head_      = 0;  ///< taps in direct form
  int64_t time_      = 0;  ///< samples processed since construction or reset
  std::vector<Level> levels_;

  std::vector<float> head_taps_;   ///< the first head_ taps
  std::vector<float> head_input_;  ///< head_ − 1 samples of history, then the current block
  std::vector<float> inputs_;      ///< ring of the last (≥ 2× largest partition) input samples
  std::vector<float> outputs_;     ///< ring of the levels' contributions to the coming outputs
  std::vector<float> work_re_, work_im_, work_time_;  ///< one spectrum and one block of samples
  std::vector<float> twiddles_;  ///< the FFTs' six tables of (largest partition) values
};

}  // namespace grafx::dsp
