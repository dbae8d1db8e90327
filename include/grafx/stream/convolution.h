#pragma once
/// Real-time convolution of streaming audio with fixed FIRs, without latency: one channel
/// (StreamConvolver), or a matrix of paths from input to output channels (StreamConvolverMatrix).
///
/// Each call to `process` takes the next n samples of the input x and returns the same n samples
/// of y[t] = Σ_k h[k]·x[t − k] (x before the first sample, or before a reset, is silence). The
/// output does not depend on how the stream is cut into calls. All memory is allocated by the
/// constructor: process() allocates nothing, locks nothing and throws nothing, so it may run on
/// an audio thread. It is not thread-safe: one convolver per thread. (As for any float DSP, a
/// host whose signals decay into subnormal numbers should flush them to zero.)
///
/// The filter is split in time (non-uniform partitioned convolution, after Gardner 1995):
///
///   taps [0, H), H = 64                direct form, sample by sample
///   taps [s, s + c·B), B ≤ s           a "level": c partitions of B taps, by overlap-save FFTs
///
/// The levels follow one another from tap H on, each with partitions of the largest power of
/// two B ≤ s (at most 32768), s being the level's first tap, so sizes grow geometrically. A level
/// runs every B samples, when a block of B inputs is complete: one real FFT of the last 2B
/// inputs (kept for c blocks: a frequency-domain delay line), c spectral products, one inverse
/// FFT. Since s ≥ B, the block's contribution is needed from the next sample on only, so no
/// latency is added; the price is work in bursts at block boundaries (a small one every H
/// samples, every level at once every 32768 at most). A level's *steps* (each input's transform,
/// then each output's products and inverse transform) need not run at once: they run one after
/// the other at the ends of the chunks of H samples between the block's end and s − B samples
/// later, when its first output is due; from partitions of 2048 on, B is chosen so that there
/// is room for a chunk per step (s − B ≥ H·(inputs + outputs − 1)): a partition more a path in
/// the plans below (1–4 % more products, no slower in dsp_bench stream), and a stereo level of
/// 8192 no longer does its 4 transforms of 16384 points in one call of 64 samples. Where many
/// convolvers run side by side, their bursts add up on the same calls unless each is given its
/// own phase φ: its levels' blocks then end where t + φ is a multiple of B (t: samples since
/// construction or reset) instead of t, so its large levels run on other calls. The output is
/// the same: whatever the blocks' ends, a level's partitions start at tap s ≥ B, and the inputs
/// before the first end are the silence before the stream. (22 convolvers of 96,000 taps, 2 × 2,
/// full or diagonal, on one core: the slowest 64-sample block of them all takes 10 ms with
/// phases 0, 1.1 ms with phases spread over 32768, the mean 0.13 ms either way.) `level_runs`
/// lists the steps' periods, offsets and modelled costs, from which a stream chooses the phases
/// of its convolvers (set_phase). The number of partitions of each level is the cheapest under
/// a cost model (transforms against spectral products, measured) found by dynamic programming;
/// filters of up to 256 taps are direct form alone where that is cheaper (up to about 150
/// taps). For example:
///
///   2,047 taps    64 direct, 3 × 64, 7 × 256
///   96,000 taps   64 direct, 8 × 64, 15 × 512, 11 × 8192 (from tap 8256: a chunk for its steps)
///
/// A partition whose taps are all zero costs nothing (no product; an input or output without
/// products in a level is not transformed there, and a level without any is dropped), and the
/// cost model counts only the others, so a sparse response takes small partitions: a delay's
/// 20 coloured taps of 39 over 96,000 samples take one level of partitions of 512 or 1,024
/// taps, of which 18 to 20 are non-zero (as many products a sample), and no direct form where
/// its first taps are zero; the dense plan above takes 33 products a sample in three levels.
///
/// **Calls of many samples.** The plan is made for calls of `max_block` samples, as a host
/// calls a plugin with blocks of its own size. Where that is 128 or more, the plan may start
/// instead with a *first level* of c partitions of B taps from tap 0 on, B ≤ the calls rounded up
/// to a power of two (uniformly partitioned overlap-save with the current block recomputed in
/// every call): a call transforms the last full block of each input followed by the current one
/// so far (zeros after it), multiplies it by the first partition, adds the older blocks'
/// products (summed once a block), and transforms back; the call's outputs are exact with no
/// latency. Its blocks end where t (not t + φ) is a multiple of B: in calls of B samples from the
/// stream's start that is one forward and one inverse transform of 2B points per B samples,
/// where the head and the levels of 64 and 256 taps take one per 64; a call of fewer samples
/// costs as much, so the cost model counts 1 + (n − gcd(n, B))/B transforms per call of n. A
/// stereo EQ of 2,047 taps planned for calls of 512 takes 4 partitions of 512 (8 products a
/// sample): in calls of 512, 2.1–4.2 times as fast as the plan above, in calls of 64, 2.3–2.6
/// times as slow; a 2 × 2 reverb of 46,000 decaying taps 1.6 times as fast (dsp_bench
/// stream-calls).
///
/// In a matrix, all paths share one partitioning, planned for the longest path (a shorter one has
/// fewer partitions in a level, or none), so that a level transforms each input once and each
/// output once: an output's spectrum is the sum of its paths' products. The more paths per
/// channel, the cheaper transforms are against products, and the larger the partitions the plan
/// takes: partitions of 16384 from about 74,000 taps and of 32768 from about 180,000 in a full
/// 2 × 2 matrix, against 123,000 and 213,000 for one path alone. Four 96,000-tap paths between
/// two channels, for example, take 64 direct each, then 3 × 64, 8 × 256, 7 × 2048, 5 × 16384:
/// 4 forward and 4 inverse transforms a level instead of 8 and 8, and 23 partitions a path
/// instead of 34.
///
/// The FFTs are radix 4 (and 2) on split real and imaginary arrays in float, with twiddles
/// computed in double: the forward transform leaves its spectrum in bit-reversed order and the
/// inverse takes it so, which the spectral products do not mind, so no permutation is ever done.
/// The filter spectra are computed in double. Against a direct convolution in double, the error
/// is below 3e−7 of the output's peak for filters of up to 96,000 random taps and white noise.
/// Built for x86-64 by GCC, process() also has a copy of its loops compiled for AVX2, which it
/// takes where the processor has AVX2 (a third faster): the same operations on vectors twice as
/// wide, without FMA, so the output is the same to the bit.
///
///   StreamConvolver reverb(impulse_response, 512);
///   reverb.process(in, out, 512);  // in the audio callback, any 1 ≤ n ≤ 512 samples
///
///   StreamConvolverMatrix stereo(2, 2, {{0, 0, ll}, {0, 1, lr}, {1, 0, rl}, {1, 1, rr}}, 512);
///   stereo.process(ins, outs, 512);  // ins[2], outs[2]: 512 samples each
///
///   // k of n convolvers side by side, of the same largest partition: phases spread over it.
///   StreamConvolver send(impulse_response, 512, k * largest_partition / n);

#include <cstdint>
#include <vector>

namespace grafx::dsp {

/// Several FIR paths between input and output channels, convolved block by block with no
/// latency: outputs[o][t] = Σ over the paths p into o of (h_p ∗ inputs[input_p])[t]. Each input
/// is transformed once per partition level, and each output accumulates its paths' products in
/// the frequency domain and is transformed back once per level. Allocates only in the
/// constructor: process() allocates nothing, locks nothing, throws nothing.
class StreamConvolverMatrix {
 public:
  /// h_p = `taps` (at least one) from input channel `input` to output channel `output`.
  struct Path {
    int64_t input = 0, output = 0;
    std::vector<float> taps;
  };

  /// `paths` (any number, several between the same channels adding up) between `n_inputs` and
  /// `n_outputs` channels; `max_block`: the most samples one process() call may take (≥ 1), and
  /// the calls the plan is made for (exact in calls of any size up to it).
  /// Throws std::invalid_argument otherwise. `phase` (any value; only its remainder modulo
  /// 32768, the largest partition there can be, matters) shifts the levels' blocks: a level of
  /// partitions of B taps runs when (t + phase) mod B = 0, t samples after construction or
  /// reset. The output does not depend on it but for roundings (a phase of 0 gives the output
  /// of the convolver without one, to the bit). Convolvers side by side given phases spread
  /// over their largest_partition() run their large levels on different calls, which lowers
  /// the slowest call of them all (phases B apart put levels of B and less on the same calls).
  StreamConvolverMatrix(int64_t n_inputs, int64_t n_outputs, const std::vector<Path>& paths,
                        int64_t max_block, int64_t phase = 0);

  /// The next n samples (0 ≤ n ≤ max_block) of each input, inputs[i][0 … n), to the same samples
  /// of each output, outputs[o][0 … n); an output without paths gets zeros. No output may
  /// overlap an input or another output.
  void process(const float* const* inputs, float* const* outputs, int64_t n) noexcept;

  /// Forgets the inputs so far: the next samples are convolved as if preceded by silence.
  void reset() noexcept;

  /// The levels' work as it comes: steps of a level run every `period` samples (a power of two
  /// from 64 to 32768), on the call where (t + phase) mod period becomes `offset`, for about
  /// `nanoseconds` (the plan's cost model: their transforms and products, on the machine the
  /// model was measured on; a weight to spread work by, not a time to rely on). The first level
  /// runs in every call, whatever the phase, and is not listed.
  struct LevelRun {
    int64_t period = 0, offset = 0;
    double nanoseconds = 0;
  };
  std::vector<LevelRun> level_runs() const;

  /// Changes the phase (as the constructor's) and resets: a convolver side by side with others
  /// takes its phase once their plans are known.
  void set_phase(int64_t phase) noexcept;

  int64_t n_inputs() const { return n_inputs_; }
  int64_t n_outputs() const { return n_outputs_; }
  int64_t max_block() const { return max_block_; }
  /// The phase as given to the constructor.
  int64_t phase() const { return phase_; }
  /// The partitions of the largest level, in taps (0 without levels): the period of the
  /// largest bursts, over which to spread phases.
  int64_t largest_partition() const { return largest_partition_; }
  /// The spectral products of the levels, one per partition with a non-zero tap: each is a
  /// complex multiply-add per bin of B bins every B samples, so about this many per sample.
  int64_t partition_products() const;

 private:
  /// A path's taps in direct form.
  struct Head {
    int64_t input = 0, output = 0;
    int64_t taps  = 0;  ///< the first `taps` of the filter, at `first` in head_taps_
    int64_t first = 0;
  };

  /// Partitions [offset + j·size, offset + (j + 1)·size), j < count, of the filters.
  struct Level {
    /// An input with partitions in the level: a ring of `depth` spectra, at `first` in `spectra`.
    struct Input {
      int64_t channel = 0, depth = 0, first = 0;
      int64_t newest = 0;  ///< the slot of the newest spectrum
    };
    /// Partition j of a path meets the spectrum of input `input` (of the level) j blocks ago.
    struct Term {
      int64_t input = 0, age = 0;
      int64_t filter = 0;  ///< offset of the partition's spectrum in `filters`
    };
    /// An output with partitions in the level: its terms are [first, end) of `terms`, those of
    /// the newest block's spectrum (age 0) first, the older ones' from `older` on.
    struct Output {
      int64_t channel = 0, first = 0, older = 0, end = 0;
    };
    int64_t size = 0, count = 0, offset = 0;
    /// Its steps (a transform of each input, then the products and inverse transform of each
    /// output) run spread over the `offset − size` samples between the end of a block and the
    /// first output it contributes to: step j at step_time(j) samples after the block's end.
    int64_t steps() const { return int64_t(inputs.size() + outputs.size()); }
    int64_t step_time(int64_t j) const;
    std::vector<Input> inputs;
    std::vector<Output> outputs;
    std::vector<Term> terms;
    std::vector<float> filters;  ///< spectra of 2·(size + kPad) floats (kPad: in the source)
    std::vector<float> spectra;  ///< the inputs' rings of spectra, same layout
  };

  // Inline (defined and used in the source only): not interposable, so process() can have a copy
  // of them compiled for AVX2.
  inline void process_chunks(const float* const* inputs, float* const* outputs, int64_t n) noexcept;
  /// Runs the first level over the n samples of a call that starts at time_ = `begin`.
  inline void run_first_level(const float* const* inputs, float* const* outputs, int64_t n,
                              int64_t begin) noexcept;
  /// Runs the steps of `level` that are due `into` samples after its block ended at `end`
  /// (time_ + start_).
  inline void run_steps(Level& level, int64_t end, int64_t into) noexcept;
  /// (ar, ai) = (or +=, if `accumulate`) the sum of terms [first, end) of `level`.
  inline void sum_products(const Level& level, int64_t first, int64_t end, bool accumulate,
                           float* ar, float* ai) noexcept;

  int64_t n_inputs_ = 0, n_outputs_ = 0, max_block_ = 0;
  bool avx2_     = false;  ///< whether process() runs its AVX2 copy (x86-64)
  int64_t phase_ = 0;
  /// The phase modulo 32768, ≥ 0: the levels run where time_ + start_ is a multiple of their
  /// size (every level's size divides 32768).
  int64_t start_   = 0;
  int64_t time_    = 0;      ///< samples processed since construction or reset
  int64_t history_ = 0;      ///< samples before the current block that the heads read
  std::vector<Head> heads_;  ///< by output
  /// Partitions from tap 0 on (count 0: none), recomputed in every call (see the source).
  Level first_;
  std::vector<Level> levels_;
  std::vector<float> first_windows_;  ///< per input of first_: its last block, then the current
  std::vector<float> first_older_;    ///< per output of first_: its older blocks' products

  std::vector<float> head_taps_;    ///< the heads' taps, one after the other
  std::vector<float> head_inputs_;  ///< per input, history_ samples then the current block
  /// Per input, a ring of its last samples: a level's 2B inputs, kept until its last step.
  std::vector<float> inputs_;
  std::vector<float> outputs_;  ///< per output, a ring of the levels' coming contributions
  int64_t input_ring_ = 0, output_ring_ = 0;  ///< their sizes (powers of two)
  int64_t largest_partition_ = 0;             ///< of the levels
  std::vector<float> work_;                   ///< one spectrum, the largest
  std::vector<float> twiddles_;  ///< the FFTs' six tables of (largest partition) values
};

/// One FIR on one channel: the matrix of one path.
class StreamConvolver {
 public:
  /// `taps`: h[0], h[1], … (at least one); `max_block`: the most samples one process() call
  /// may take (≥ 1). Throws std::invalid_argument otherwise. `phase`: as for the matrix, the
  /// shift of the partitions' blocks, for convolvers side by side.
  StreamConvolver(const std::vector<float>& taps, int64_t max_block, int64_t phase = 0);

  /// The next n samples (0 ≤ n ≤ max_block) of the input to the same samples of the output.
  /// `input` and `output` must not overlap.
  void process(const float* input, float* output, int64_t n) noexcept {
    matrix_.process(&input, &output, n);
  }

  /// Forgets the input so far: the next sample is convolved as if preceded by silence.
  void reset() noexcept { matrix_.reset(); }
  /// As the matrix's.
  void set_phase(int64_t phase) noexcept { matrix_.set_phase(phase); }
  std::vector<StreamConvolverMatrix::LevelRun> level_runs() const { return matrix_.level_runs(); }

  /// Number of taps.
  int64_t length() const { return length_; }
  int64_t max_block() const { return matrix_.max_block(); }
  int64_t phase() const { return matrix_.phase(); }
  int64_t largest_partition() const { return matrix_.largest_partition(); }
  int64_t partition_products() const { return matrix_.partition_products(); }

 private:
  int64_t length_ = 0;
  StreamConvolverMatrix matrix_;
};

}  // namespace grafx::dsp
