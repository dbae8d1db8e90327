#pragma once
/// The mix-matching loss of "Searching for Music Mixing Graphs: A Pruning Approach" (Lee et
/// al., DAFx 2024): a multi-resolution mel-STFT loss on the left, right, mid and side signals.
///
/// For an estimate x and a target y (stereo, `B×2×L`), per item and per channel
/// c ∈ {L, R, M = L+R, S = L−R} of the A-weighted signals (first `skip_samples` dropped):
///
///   X_r = mel_r · max(|STFT_r(x_c)|, √eps)        (n_mels × frames, same for Y_r)
///   d_c = 1/R Σ_r ( ‖Y_r − X_r‖_F / ‖Y_r‖_F  +  mean |log Y_r − log X_r| )
///   loss = mean over items of  lr_weight · (d_L + d_R)/2 + mid_weight · d_M + side_weight · d_S
///
/// STFT_r: FFT size n_r ∈ fft_sizes, hop n_r/4, periodic Hann window of n_r samples, centred
/// frames (reflect padding of n_r/2). mel_r: librosa's Slaney mel filterbank (`n_mels` bands,
/// 0 Hz to Nyquist, unit-area triangles; a band narrower than the bin spacing, which holds no
/// FFT bin, is left out of that resolution: any sample rate works). A-weighting: auraloss's 101-tap
/// FIR fit. The four channels of all items go through one batched STFT per resolution (one for the
/// estimate, one for the target). See docs/loss.md for the math and where it differs from
/// grafx-prune and auraloss.
///
/// Inputs: estimate and target of the same shape `B×2×L` or `2×L`, float32 or float64, on any
/// one device; L − skip_samples must be at least the largest FFT size.
///
///   grafx::MixLossOptions options;
///   options.skip_samples = 30000;                      // the paper skips the first second
///   grafx::MixLoss loss(options);
///   at::Tensor value = loss(estimate, target);         // scalar, differentiable
///   grafx::MixLossTerms terms = loss.terms(estimate, target);  // also L_lr, L_m, L_s, ...

#include <grafx/tensors.h>

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace grafx {

struct MixLossOptions {
  std::vector<int64_t> fft_sizes = {512, 1024, 4096};  ///< hop = fft/4, window = fft

  SampleRate sample_rate = 30000;  ///< sets the mel bands and the A-weighting filter
  int64_t n_mels         = 96;
  bool a_weighting       = true;
  double eps             = 1e-4;  ///< floor of the squared STFT magnitude
  int64_t skip_samples   = 0;     ///< warm-up: samples at the start left out of the loss
  double lr_weight       = 0.5;   ///< weight of (d_L + d_R) / 2
  double mid_weight      = 0.25;
  double side_weight     = 0.25;
};

/// The loss and its parts, for reports. All but `per_item` are means over the batch.
struct MixLossTerms {
  at::Tensor total;     ///< scalar, the loss
  at::Tensor per_item;  ///< [B]: the loss of each item (e.g. candidates of a pruning trial)
  at::Tensor lr;        ///< scalar, L_lr = (d_L + d_R) / 2
  at::Tensor mid;       ///< scalar, L_m = d_M
  at::Tensor side;      ///< scalar, L_s = d_S
  /// [resolutions, 4]: spectral convergence per resolution (fft_sizes order) and channel
  /// (L, R, M, S); d_c is the mean over resolutions of spectral_convergence + log_magnitude.
  at::Tensor spectral_convergence;
  at::Tensor log_magnitude;  ///< [resolutions, 4]: mean |log Y − log X|
};

/// The terms' mean |log Y − log X| in dB: how far the spectra are apart, in words people use.
double spectral_difference_db(const MixLossTerms& terms);

/// A loss cut into parts along one axis (frequency bands or seconds) that sum to it exactly:
/// each resolution's spectral convergence ‖Y − X‖/‖Y‖ shared out as the part's share of the
/// squared differences ‖Y − X‖², its mean |log Y − log X| as the part's share of the absolute
/// log ratios; then weighted over channels and resolutions as the loss is.
struct MixLossParts {
  std::vector<std::string> labels;  ///< "250 Hz–500 Hz", "12–13 s" (of the song, skip included)
  std::vector<double> from, to;     ///< each part's range: Hz, or seconds of the song
  at::Tensor loss;                  ///< [K], float64: the parts of MixLossTerms::total
  at::Tensor channels;              ///< [K, 4], float64: the parts of d_L, d_R, d_M, d_S
};

/// Where a loss lives: its terms, and its parts by frequency band and by second of the song.
struct MixLossBreakdown {
  MixLossTerms terms;
  MixLossParts bands;    ///< by the centre frequency of each mel band (default_band_edges_hz)
  MixLossParts seconds;  ///< by the time of each frame's centre, a second each
};

/// Octave bands around the audible range, in Hz: 0, 63, 125, 250, 500, 1k, 2k, 4k, 8k, 16k (a
/// band reaches to the next edge; the last to Nyquist; bands above Nyquist are left out).
std::vector<double> default_band_edges_hz();

class MixLossStream;

/// A target's mel frames over a whole song (per resolution [4, frames, bands], its L, R, M, S
/// channels), made once by MixLoss::target_frames to compare many estimates with one target
/// (pruning trials): a stream given them computes the estimate's frames alone.
struct MixLossTargetFrames {
  std::vector<at::Tensor> mels;
  int64_t n_samples = 0;
};

class MixLoss {
 public:
  /// Throws LossError [grafx.loss.options] for invalid options (no or too small FFT sizes,
  /// n_mels < 1, non-positive eps or sample
  /// rate, negative skip or weights).
  explicit MixLoss(MixLossOptions options = {});

  /// The scalar loss. Throws LossError [grafx.loss.shape], [grafx.loss.dtype],
  /// [grafx.loss.skip] or [grafx.loss.too_short] for bad inputs.
  at::Tensor operator()(const at::Tensor& estimate, const at::Tensor& target) const;
  /// The loss with its parts.
  MixLossTerms terms(const at::Tensor& estimate, const at::Tensor& target) const;

  const MixLossOptions& options() const { return options_; }

  /// A stream for the loss of signals of `n_samples` samples fed in chunks (MixLossStream).
  MixLossStream stream(int64_t n_samples) const;
  /// terms(estimate, target) of two whole songs (2×L), fed to a stream in chunks: memory flat
  /// in the songs' length.
  MixLossTerms streamed_terms(const at::Tensor& estimate, const at::Tensor& target) const;
  /// streamed_terms with the loss's parts by frequency band (bands from `band_edges_hz`,
  /// increasing from 0) and by second (`grafx loss --breakdown`). Throws LossError
  /// [grafx.loss.options] for edges that do not start at 0 or do not increase.
  MixLossBreakdown breakdown(
      const at::Tensor& estimate, const at::Tensor& target,
      const std::vector<double>& band_edges_hz = default_band_edges_hz()) const;
  /// The mel frames of one stereo target (2×L), computed in chunks.
  MixLossTargetFrames target_frames(const at::Tensor& target) const;

  /// The frames of a whole song (2×L) for crop_terms: target_frames with no samples skipped.
  MixLossTargetFrames song_frames(const at::Tensor& song) const;
  /// terms(estimate, target) where the target is crops of `song` (2×L) starting at `starts`,
  /// one per item of the estimate (B×2×T), with its frames taken from `frames`
  /// (song_frames(song)) where a crop's frame reads the song's samples only: every frame but a
  /// few at the crop's ends, when the crop's loss starts (start + skip_samples) at a multiple
  /// of frame_alignment(). Elsewhere, and for crops off that grid, the crop's frames are made
  /// from its samples. Equal to terms of the crops up to float rounding; a fit's crops on the
  /// grid save it the target's transforms. A crop's skipped warm-up is never read, so it may
  /// reach before the song (start < 0 ≤ start + skip_samples): a fit's crop at the song's start
  /// warms up on the silence before it. Throws LossError [grafx.loss.shape] for crops whose
  /// compared part lies outside the song, as terms does for bad signals.
  MixLossTerms crop_terms(const at::Tensor& estimate, const at::Tensor& song,
                          const MixLossTargetFrames& frames,
                          const std::vector<int64_t>& starts) const;
  /// crop_terms in two halves: the target's, frames of the crops of `song` of `n_samples`
  /// each at `starts` (one [B·4, frames, n_mels] per resolution, without gradient) ...
  std::vector<at::Tensor> crop_target_frames(const at::Tensor& song,
                                             const MixLossTargetFrames& frames,
                                             const std::vector<int64_t>& starts,
                                             int64_t n_samples) const;
  /// ... and the comparison of estimates (B×2×T) with them, which reads no host value: the part
  /// a captured fit step holds, its target frames copied in before each replay.
  MixLossTerms terms_against(const at::Tensor& estimate,
                             const std::vector<at::Tensor>& target_frames) const;
  /// The least common multiple of the resolutions' hop sizes: crops whose loss starts at a
  /// multiple of it find their target's frames among the song's.
  int64_t frame_alignment() const;

 private:
  friend class MixLossStream;
  struct Constants;
  /// B×2×T signals A-weighted (when the options say so), zero-phase, zeros beyond their ends.
  at::Tensor a_weighted(const at::Tensor& stereo) const;
  /// Mel magnitudes of the L, R, M, S channels of B×2×T signals: one [B·4, frames, n_mels]
  /// per resolution, each from one batched STFT.
  std::vector<at::Tensor> mel_spectrograms(const at::Tensor& stereo) const;
  /// Frames [first_frame, end_frame) at resolution r of mel_spectrograms(regions), made from
  /// the samples they read alone: [B·4, frames, n_mels].
  at::Tensor edge_frames(const at::Tensor& regions, size_t r, int64_t first_frame,
                         int64_t end_frame) const;
  /// The terms of estimates' and targets' mel frames (mel_spectrograms), B items.
  MixLossTerms compared(const std::vector<at::Tensor>& x_mels,
                        const std::vector<at::Tensor>& y_mels, int64_t n_items) const;
  /// Mel magnitudes [B·4, frames, n_mels] at resolution r of the L, R, M = L + R and S = L − R
  /// channels of B×2×T signals reflected by `reflect_pad` samples at both ends (0: signals
  /// padded already). M's and S's spectra are the sum and difference of L's and R's.
  at::Tensor mel_frames(const at::Tensor& stereo, int64_t reflect_pad, size_t r) const;
  /// A cached constant in the dtype and device of `like`.
  at::Tensor constant(const std::string& key, const at::Tensor& value,
                      const at::Tensor& like) const;
  /// The terms from spectral convergence and log distances, each [R, B, 4].
  MixLossTerms assemble(const at::Tensor& convergence, const at::Tensor& log_distance) const;

  MixLossOptions options_;
  std::shared_ptr<Constants> constants_;  // windows, filterbanks, FIR; shared by copies
};

/// The mix loss of signals too long to hold their spectrograms (a whole song), fed in
/// consecutive chunks of any sizes: equal to MixLoss::terms of the whole signals up to float
/// rounding, in memory bounded by the chunk and the largest FFT size, not by the song's length.
/// It keeps the few thousand samples that frames overlapping the next chunk need, and sums the
/// distances' parts (squared differences and targets, absolute log ratios) in double precision.
/// Without gradients.
///
///   MixLossStream stream = loss.stream(n_samples);      // the signals' whole length
///   stream.add(estimate.narrow(-1, 0, 1000), target.narrow(-1, 0, 1000));
///   stream.add(estimate.narrow(-1, 1000, n_samples - 1000), ...);
///   MixLossTerms terms = stream.finish();               // = loss.terms(estimate, target)
class MixLossStream {
 public:
  /// Throws what MixLoss::terms throws for signals of `n_samples` samples.
  MixLossStream(MixLoss loss, int64_t n_samples);
  /// A stream against a target whose frames are known: add(estimate) alone, one item (2×T).
  MixLossStream(MixLoss loss, std::shared_ptr<const MixLossTargetFrames> target);
  /// The next samples of both signals (B×2×T or 2×T, the same B every time). Throws LossError
  /// [grafx.loss.shape] for a shape unlike the earlier chunks' or more samples than announced,
  /// [grafx.loss.dtype] for mismatched types.
  void add(const at::Tensor& estimate, const at::Tensor& target);
  /// The next samples of the estimate, for a stream with a given target.
  void add(const at::Tensor& estimate);
  /// The loss, once all n_samples have come (LossError [grafx.loss.shape] if not).
  MixLossTerms finish() const;
  /// From now on, also keeps the parts of the loss by mel band and by second, for breakdown().
  void keep_parts();
  /// finish() with the loss's parts by band (mel bands grouped by their centres' place among
  /// `band_edges_hz`) and by second. Throws LossError [grafx.loss.shape] unless keep_parts()
  /// came before the first samples.
  MixLossBreakdown breakdown(const std::vector<double>& band_edges_hz) const;

 private:
  friend class MixLoss;
  struct Collected {  // the target's frames, kept by MixLoss::target_frames
    std::vector<std::vector<at::Tensor>> mels;
  };
  [[noreturn]] static void fail(const std::string& message);
  int64_t check_chunk(const at::Tensor& estimate);  // returns B
  void append(const at::Tensor& rows);              // [B or 2B, 2, T]
  void compute_weighted();  // the A-weighted samples that the received ones determine
  void compute_frames();    // the frames whose samples are all known
  /// Adds frames [f0, f1) of resolution r (the squared differences and absolute log ratios of
  /// their mel magnitudes, [B·4, frames, bands], double) to the parts by band and by second.
  void add_parts(size_t r, int64_t f0, int64_t f1, int64_t hop, const at::Tensor& squared,
                 const at::Tensor& log_ratio);
  /// The first second of the song the loss reads, and how many it reads.
  std::pair<int64_t, int64_t> seconds() const;
  /// Parts of the loss from parts of each resolution's sums ([B·4, K] each).
  MixLossParts parts(const std::vector<at::Tensor>& difference,
                     const std::vector<at::Tensor>& log_ratio, std::vector<double> from,
                     std::vector<double> to, std::vector<std::string> labels) const;

  MixLoss loss_;
  int64_t n_samples_, length_;  // all samples; those after skip_samples (the loss's)
  int64_t n_items_ = -1;        // B
  int64_t seen_    = 0;         // samples added so far, skipped ones included
  at::Tensor raw_;              // [2B, 2, ·]: estimates then targets, from raw_start_
  int64_t raw_start_ = 0, received_ = 0;
  at::Tensor weighted_;  // the same A-weighted, from weighted_start_ to weighted_end_
  int64_t weighted_start_ = 0, weighted_end_ = 0;
  at::ScalarType dtype_ = at::kFloat;
  std::vector<int64_t> next_frame_;                           // per resolution
  std::vector<at::Tensor> difference_, target_, log_ratio_;   // per resolution, [B·4] double
  std::vector<int64_t> count_;                                // per resolution: frames × bands
  std::shared_ptr<const MixLossTargetFrames> target_frames_;  // given, or none
  Collected* collected_ = nullptr;
  struct Parts {  // per resolution, [B·4, bands] and [B·4, seconds], double
    std::vector<at::Tensor> band_difference, band_log_ratio, second_difference, second_log_ratio;
  };
  std::shared_ptr<Parts> parts_;  // where keep_parts() asked for them
};

}  // namespace grafx
