#include <grafx/loss/mix_loss.h>

#include <grafx/dsp/convolution.h>
#include <grafx/dsp/forward_mode.h>
#include <grafx/error.h>
#include <grafx/processors/processor.h>
#include <grafx/text.h>

#include "loss/spectral.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace grafx {

namespace {

const char* const kWhat = "mix loss";
/// Samples per chunk of a whole song fed to a stream (11.9 s at 44.1 kHz).
constexpr int64_t kStreamChunk = int64_t(1) << 19;

void check_options(const MixLossOptions& o) {
  auto fail = [](const std::string& message) {
    throw LossError("grafx.loss.options", std::string(kWhat) + ": " + message);
  };
  if (!(o.sample_rate > 0))
    fail("expected a positive sample rate, but got " + std::to_string(o.sample_rate));
  if (o.n_mels < 1 || o.n_mels > detail::kMostMelBands)
    fail("expected 1 to " + std::to_string(detail::kMostMelBands) + " mel bands, but got " +
         std::to_string(o.n_mels));
  if (!(o.eps > 0)) fail("expected a positive eps, but got " + std::to_string(o.eps));
  if (o.skip_samples < 0)
    fail("expected skip_samples >= 0, but got " + std::to_string(o.skip_samples));
  if (!(o.lr_weight >= 0 && o.mid_weight >= 0 && o.side_weight >= 0))
    fail("expected non-negative channel weights, but got " + std::to_string(o.lr_weight) + ", " +
         std::to_string(o.mid_weight) + ", " + std::to_string(o.side_weight));
}

/// Samples [from, to) of a signal of `length` samples reflected at both ends (sample −i is
/// sample i), as indices into it: the samples that frames reaching past its ends read (CPU).
at::Tensor reflected_range(int64_t from, int64_t to, int64_t length) {
  const at::Tensor index = at::arange(from, to, at::kLong);
  return at::where(index < 0, -index, at::where(index >= length, 2 * (length - 1) - index, index));
}

/// sum += value, where sum may be undefined (nothing summed yet).
void add_to_sum(at::Tensor& sum, const at::Tensor& value) {
  sum = sum.defined() ? sum + value : value;
}

void check_band_edges(const std::vector<double>& edges) {
  bool increasing = !edges.empty() && edges[0] == 0;
  for (size_t i = 1; increasing && i < edges.size(); ++i)
    increasing = std::isfinite(edges[i]) && edges[i] > edges[i - 1];
  if (!increasing)
    throw LossError(
        "grafx.loss.options",
        std::string(kWhat) + ": expected band edges in Hz that start at 0 and increase");
}

/// "63 Hz", "1 kHz", "15 kHz".
std::string frequency_text(double hz) {
  return hz >= 1000 ? significant_digits(hz / 1000, 3) + " kHz" : significant_digits(hz, 3) + " Hz";
}

}  // namespace

std::vector<double> default_band_edges_hz() {
  return {0, 63, 125, 250, 500, 1000, 2000, 4000, 8000, 16000};
}

struct MixLoss::Constants {
  std::vector<detail::StftResolution> resolutions;
  std::vector<at::Tensor> windows;            // per resolution, [fft], float64 CPU
  std::vector<at::Tensor> filterbanks;        // per resolution, sparse [n_mels, fft/2+1]
  std::vector<detail::BandPairs> band_pairs;  // the same as two (band, weight) pairs per bin
  std::vector<at::Tensor> band_centres_hz;    // per resolution, [n_bands]: each band's centroid
  at::Tensor a_weighting;                     // [101]
  ConstantCache cache;                        // the above on each device and dtype in use
};

MixLoss::MixLoss(MixLossOptions options)
    : options_(std::move(options)), constants_(std::make_shared<Constants>()) {
  check_options(options_);
  for (int64_t fft_size : options_.fft_sizes)
    constants_->resolutions.push_back({fft_size, fft_size / 4, fft_size});
  detail::check_resolutions(constants_->resolutions, kWhat);
  for (const auto& resolution : constants_->resolutions) {
    at::Tensor filterbank =
        detail::mel_filterbank(options_.sample_rate, resolution.fft_size, options_.n_mels);
    // A band narrower than the FFT's bin spacing holds no bin (the lowest bands of the small
    // FFTs at 44.1 kHz and above): its magnitude is zero in both signals, so it carries no
    // information and its log is undefined. It is left out of that resolution, as if librosa's
    // or torchaudio's all-zero row were dropped.
    filterbank = filterbank.index_select(0, (filterbank.amax(1) > 0).nonzero().squeeze(1));
    const at::Tensor bin_hz = at::arange(filterbank.size(1), at::kDouble) *
                              (double(options_.sample_rate) / double(resolution.fft_size));
    constants_->band_centres_hz.push_back((filterbank * bin_hz).sum(1) / filterbank.sum(1));
    constants_->windows.push_back(detail::padded_hann_window(resolution));
    constants_->filterbanks.push_back(filterbank.to_sparse());
    constants_->band_pairs.push_back(detail::band_pairs(filterbank));
  }
  if (options_.a_weighting) constants_->a_weighting = detail::a_weighting_fir(options_.sample_rate);
}

at::Tensor MixLoss::operator()(const at::Tensor& estimate, const at::Tensor& target) const {
  return terms(estimate, target).total;
}

double spectral_difference_db(const MixLossTerms& terms) {
  return terms.log_magnitude.mean().item<double>() * 20.0 / std::log(10.0);
}

MixLossTerms MixLoss::terms(const at::Tensor& estimate, const at::Tensor& target) const {
  detail::check_signal_pair(estimate, target, kWhat);
  const bool stereo = (estimate.dim() == 2 || estimate.dim() == 3) && estimate.size(-2) == 2;
  if (!stereo || estimate.numel() == 0) {
    std::ostringstream s;
    s << kWhat << ": expected stereo signals of shape B×2×L or 2×L (B >= 1), but got "
      << estimate.sizes();
    throw LossError("grafx.loss.shape", s.str());
  }
  const int64_t n_samples = estimate.size(-1), skip = options_.skip_samples;
  detail::check_length(n_samples, skip,
                       *std::max_element(options_.fft_sizes.begin(), options_.fft_sizes.end()),
                       kWhat);
  const int64_t length  = n_samples - skip;
  const int64_t n_items = estimate.numel() / (2 * n_samples);

  auto crop = [&](const at::Tensor& x) {
    return x.reshape({-1, 2, n_samples}).narrow(2, skip, length);
  };
  // Two calls rather than one on the concatenation: the backward pass then runs over the
  // estimate's rows only (a target without gradient records no graph).
  return compared(mel_spectrograms(crop(estimate)), mel_spectrograms(crop(target)), n_items);
}

int64_t MixLoss::frame_alignment() const {
  int64_t alignment = 1;
  for (const auto& resolution : constants_->resolutions)
    alignment = std::lcm(alignment, resolution.hop_size);
  return alignment;
}

MixLossTargetFrames MixLoss::song_frames(const at::Tensor& song) const {
  MixLossOptions whole = options_;
  whole.skip_samples   = 0;
  return MixLoss(whole).target_frames(song);
}

MixLossTerms MixLoss::crop_terms(const at::Tensor& estimate, const at::Tensor& song,
                                 const MixLossTargetFrames& frames,
                                 const std::vector<int64_t>& starts) const {
  if (estimate.dim() != 3 || estimate.size(0) != int64_t(starts.size()) || starts.empty())
    throw LossError("grafx.loss.shape",
                    std::string(kWhat) + " of crops: expected one B×2×T estimate per crop " +
                        "start, but got " + std::to_string(estimate.dim()) + " dimensions for " +
                        std::to_string(starts.size()) + " starts");
  const int64_t n                      = estimate.size(2);
  const std::vector<at::Tensor> target = crop_target_frames(song, frames, starts, n);
  const int64_t skip                   = options_.skip_samples;  // the warm-up is not compared
  detail::check_signal_pair(estimate.select(0, 0).narrow(-1, skip, n - skip),
                            song.narrow(1, starts[0] + skip, n - skip), kWhat);
  return terms_against(estimate, target);
}

std::vector<at::Tensor> MixLoss::crop_target_frames(const at::Tensor& song,
                                                    const MixLossTargetFrames& frames,
                                                    const std::vector<int64_t>& starts,
                                                    int64_t n) const {
  auto fail = [](const std::string& message) {
    throw LossError("grafx.loss.shape", std::string(kWhat) + " of crops: " + message);
  };
  if (starts.empty()) fail("expected at least one crop start");
  if (song.dim() != 2 || frames.n_samples != song.size(1) ||
      frames.mels.size() != constants_->resolutions.size())
    fail("expected a 2×L song and its frames (song_frames)");
  const int64_t skip = options_.skip_samples;
  detail::check_length(
      n, skip, *std::max_element(options_.fft_sizes.begin(), options_.fft_sizes.end()), kWhat);
  // Only the compared part must lie within the song: a warm-up before its start is not read.
  for (int64_t start : starts)
    if (start + skip < 0 || start + n > song.size(1))
      fail("a crop of " + std::to_string(n) + " samples from sample " + std::to_string(start) +
           " (compared from sample " + std::to_string(start + skip) +
           ") does not lie within the song's " + std::to_string(song.size(1)));
  c10::NoGradGuard no_grad;
  const int64_t length = n - skip;
  std::vector<at::Tensor> scored_parts;
  for (int64_t start : starts) scored_parts.push_back(song.narrow(1, start + skip, length));
  const at::Tensor regions = at::stack(scored_parts);
  // How far the A-weighting reads either side of a sample.
  const int64_t reach = options_.a_weighting ? constants_->a_weighting.size(0) / 2 : 0;
  std::vector<at::Tensor> y_mels;
  at::Tensor weighted;  // the regions weighted, where a resolution needs them all
  for (size_t r = 0; r < constants_->resolutions.size(); ++r) {
    const int64_t hop = constants_->resolutions[r].hop_size,
                  fft = constants_->resolutions[r].fft_size, half = fft / 2,
                  n_frames = 1 + length / hop;
    // Frame f reads the region's samples [f·hop − half, f·hop − half + fft), and its weighting
    // `reach` more on each side. Where those all lie inside the region (no reflection, no zeros
    // beyond it), it is the song's frame (start + skip)/hop + f, if the crop is on the grid.
    const int64_t inner_first = (half + reach + hop - 1) / hop,
                  inner_end   = std::min(n_frames, length + half - fft - reach >= 0
                                                       ? (length + half - fft - reach) / hop + 1
                                                       : 0);
    bool from_song            = fft % 2 == 0 && inner_first < inner_end;
    for (int64_t start : starts) from_song = from_song && (start + skip) % hop == 0;
    if (!from_song) {
      if (!weighted.defined()) weighted = a_weighted(regions);
      y_mels.push_back(mel_frames(weighted, half, r));
      continue;
    }
    std::vector<at::Tensor> inner;
    for (int64_t start : starts)
      inner.push_back(
          frames.mels[r].narrow(1, (start + skip) / hop + inner_first, inner_end - inner_first));
    y_mels.push_back(at::cat({edge_frames(regions, r, 0, inner_first), at::cat(inner),
                              edge_frames(regions, r, inner_end, n_frames)},
                             1));
  }
  return y_mels;
}

MixLossTerms MixLoss::terms_against(const at::Tensor& estimate,
                                    const std::vector<at::Tensor>& target_frames) const {
  const int64_t n = estimate.size(-1), skip = options_.skip_samples;
  if (estimate.dim() != 3 || estimate.size(1) != 2 || n <= skip ||
      target_frames.size() != constants_->resolutions.size())
    throw LossError("grafx.loss.shape", std::string(kWhat) +
                                            ": expected B×2×T estimates longer than the skip "
                                            "and target frames per resolution");
  return compared(mel_spectrograms(estimate.narrow(2, skip, n - skip)), target_frames,
                  estimate.size(0));
}

at::Tensor MixLoss::edge_frames(const at::Tensor& regions, size_t r, int64_t first_frame,
                                int64_t end_frame) const {
  const int64_t length = regions.size(2), hop = constants_->resolutions[r].hop_size,
                fft = constants_->resolutions[r].fft_size;
  if (first_frame >= end_frame)
    return at::empty({regions.size(0) * 4, 0, constants_->filterbanks[r].size(0)},
                     regions.options());
  const int64_t reach = options_.a_weighting ? constants_->a_weighting.size(0) / 2 : 0;
  // The samples the frames read, reflected at the region's ends, and the weighted piece that
  // holds them: weighted exactly as the whole region is, from `reach` samples more each side.
  const at::Tensor index =
      reflected_range(first_frame * hop - fft / 2, (end_frame - 1) * hop - fft / 2 + fft, length);
  const int64_t low = index.min().item<int64_t>(), high = index.max().item<int64_t>() + 1;
  const int64_t from = std::max<int64_t>(0, low - reach), to = std::min(length, high + reach);
  const at::Tensor piece = a_weighted(regions.narrow(2, from, to - from));
  const at::Tensor local =
      (index - from).contiguous();  // the same few per fit: made once per device
  const std::vector<int64_t> positions(local.data_ptr<int64_t>(),
                                       local.data_ptr<int64_t>() + local.numel());
  return mel_frames(piece.index_select(2, device_index(positions, piece.device())), 0, r);
}

MixLossTerms MixLoss::compared(const std::vector<at::Tensor>& x_mels,
                               const std::vector<at::Tensor>& y_mels, int64_t n_items) const {
  std::vector<at::Tensor> convergence, log_distance;  // per resolution, B×4
  for (size_t r = 0; r < x_mels.size(); ++r) {
    convergence.push_back(
        detail::spectral_convergence(x_mels[r], y_mels[r], {1, 2}).view({n_items, 4}));
    log_distance.push_back(
        detail::log_magnitude_distance(x_mels[r], y_mels[r], {1, 2}).view({n_items, 4}));
  }
  return assemble(at::stack(convergence), at::stack(log_distance));
}

MixLossTerms MixLoss::assemble(const at::Tensor& convergence,
                               const at::Tensor& log_distance) const {
  at::Tensor per_channel = (convergence + log_distance).mean(0);  // B×4: d_L, d_R, d_M, d_S
  at::Tensor lr = per_channel.narrow(1, 0, 2).mean(1), mid = per_channel.select(1, 2),
             side = per_channel.select(1, 3);
  MixLossTerms terms;
  terms.per_item =
      options_.lr_weight * lr + options_.mid_weight * mid + options_.side_weight * side;
  terms.total                = terms.per_item.mean();
  terms.lr                   = lr.mean();
  terms.mid                  = mid.mean();
  terms.side                 = side.mean();
  terms.spectral_convergence = convergence.mean(1);
  terms.log_magnitude        = log_distance.mean(1);
  return terms;
}

at::Tensor MixLoss::constant(const std::string& key, const at::Tensor& value,
                             const at::Tensor& like) const {
  return constants_->cache.get(key, like.options(), [&] { return value; });
}

at::Tensor MixLoss::mel_frames(const at::Tensor& stereo, int64_t reflect_pad, size_t r) const {
  const std::string key          = std::to_string(r);
  const at::Tensor window        = constant("window" + key, constants_->windows[r], stereo);
  const int64_t hop              = constants_->resolutions[r].hop_size;
  const detail::BandPairs& pairs = constants_->band_pairs[r];
  // The mel triangles overlap their neighbours only: on the CPU, frames to mel bands in one
  // Function; with tangents (forward mode), magnitudes then the sparse product; elsewhere
  // magnitudes then a dense product. Each [B, 4, frames, bands], flattened to [B·4, ...].
  if (pairs.bands.defined() && stereo.device().is_cpu() && !dsp::tangent_of(stereo).defined())
    return detail::mel_frame_magnitudes(stereo, reflect_pad, window, hop, options_.eps, pairs.bands,
                                        constant("pairs" + key, pairs.weights, stereo),
                                        pairs.n_bands, /*mid_side=*/true)
        .flatten(0, 1);
  const at::Tensor padded = detail::reflection_padded(stereo, reflect_pad);
  const at::Tensor magnitude =
      detail::frame_magnitudes(padded, window, hop, options_.eps, /*mid_side=*/true).flatten(0, 1);
  const at::Tensor& filterbank = constants_->filterbanks[r];
  // On a GPU a dense product: one matrix multiply, where the sparse one merges its indices on
  // every call (a wait for the device, which a captured step cannot hold).
  if (!stereo.device().is_cpu())
    return at::matmul(magnitude, constant("mel" + key + "/dense_t",
                                          filterbank.to_dense().t().contiguous(), padded));
  // ConstantCache holds dense tensors: cache the parts, assemble the sparse tensor per call.
  at::Tensor indices =
      constants_->cache.get("mel" + key + "/indices", padded.options().dtype(at::kLong),
                            [&] { return filterbank.indices(); });
  at::Tensor mel = at::sparse_coo_tensor(
      indices, constant("mel" + key + "/values", filterbank.values(), padded), filterbank.sizes());
  return detail::apply_filterbank(magnitude, mel);
}

at::Tensor MixLoss::a_weighted(const at::Tensor& stereo) const {
  // Zero-phase mode: the linear-phase FIR's centre tap is lag 0.
  return options_.a_weighting
             ? dsp::convolve(
                   stereo,
                   constant("a_weighting", constants_->a_weighting, stereo).view({1, 1, -1}),
                   dsp::ConvolutionMode::kZeroPhase)
             : stereo;
}

std::vector<at::Tensor> MixLoss::mel_spectrograms(const at::Tensor& stereo) const {
  // A-weighting is linear, so filtering L and R before forming M and S equals filtering all four
  // channels, at half the cost.
  const at::Tensor weighted = a_weighted(stereo);
  std::vector<at::Tensor> mels;
  for (size_t r = 0; r < constants_->resolutions.size(); ++r)
    mels.push_back(mel_frames(weighted, constants_->resolutions[r].fft_size / 2, r));
  return mels;
}

// ---- the loss in chunks ---------------------------------------------------------------------

MixLossStream MixLoss::stream(int64_t n_samples) const { return MixLossStream(*this, n_samples); }

namespace {

/// Feeds two whole songs to `stream` in chunks.
void add_in_chunks(MixLossStream& stream, const at::Tensor& estimate, const at::Tensor& target) {
  const int64_t n = target.size(-1);
  for (int64_t start = 0; start < n; start += kStreamChunk) {
    const int64_t length = std::min(kStreamChunk, n - start);
    stream.add(estimate.narrow(-1, start, length), target.narrow(-1, start, length));
  }
}

}  // namespace

MixLossTerms MixLoss::streamed_terms(const at::Tensor& estimate, const at::Tensor& target) const {
  detail::check_signal_pair(estimate, target, kWhat);
  MixLossStream stream = this->stream(target.size(-1));
  add_in_chunks(stream, estimate, target);
  return stream.finish();
}

MixLossBreakdown MixLoss::breakdown(const at::Tensor& estimate, const at::Tensor& target,
                                    const std::vector<double>& band_edges_hz) const {
  check_band_edges(band_edges_hz);
  detail::check_signal_pair(estimate, target, kWhat);
  MixLossStream stream = this->stream(target.size(-1));
  stream.keep_parts();
  add_in_chunks(stream, estimate, target);
  return stream.breakdown(band_edges_hz);
}

MixLossStream::MixLossStream(MixLoss loss, int64_t n_samples)
    : loss_(std::move(loss)), n_samples_(n_samples) {
  const MixLossOptions& o = loss_.options();
  detail::check_length(n_samples, o.skip_samples,
                       *std::max_element(o.fft_sizes.begin(), o.fft_sizes.end()), kWhat);
  length_ = n_samples - o.skip_samples;
  next_frame_.assign(o.fft_sizes.size(), 0);
  count_.assign(o.fft_sizes.size(), 0);
  difference_.resize(o.fft_sizes.size());
  target_.resize(o.fft_sizes.size());
  log_ratio_.resize(o.fft_sizes.size());
}

MixLossStream::MixLossStream(MixLoss loss, std::shared_ptr<const MixLossTargetFrames> target)
    : MixLossStream(std::move(loss), target ? target->n_samples : 0) {
  target_frames_ = std::move(target);
}

MixLossTargetFrames MixLoss::target_frames(const at::Tensor& target) const {
  // A stream of the target alone that keeps its frames as they are made (and compares none).
  const int64_t n = target.size(-1);
  MixLossStream stream(*this, n);
  MixLossStream::Collected collected;
  collected.mels.resize(options_.fft_sizes.size());
  stream.collected_ = &collected;
  c10::NoGradGuard no_grad;
  for (int64_t start = 0; start < n; start += kStreamChunk) {
    at::Tensor piece = target.narrow(-1, start, std::min(kStreamChunk, n - start));
    if (stream.check_chunk(piece) != 1) MixLossStream::fail("a target is one item");
    stream.append(piece.detach().reshape({1, 2, piece.size(-1)}));
  }
  MixLossTargetFrames frames;
  frames.n_samples = n;
  for (auto& pieces : collected.mels) frames.mels.push_back(at::cat(pieces, 1));
  return frames;
}

void MixLossStream::add(const at::Tensor& estimate, const at::Tensor& target) {
  detail::check_signal_pair(estimate, target, kWhat);
  if (target_frames_) fail("this stream's target is given: add the estimate alone");
  const int64_t items = check_chunk(estimate), n = estimate.size(-1);
  c10::NoGradGuard no_grad;
  append(
      at::cat({estimate.detach().reshape({items, 2, n}), target.detach().reshape({items, 2, n})}));
}

void MixLossStream::add(const at::Tensor& estimate) {
  if (!target_frames_) fail("this stream has no given target: add the estimate and the target");
  const int64_t items = check_chunk(estimate), n = estimate.size(-1);
  if (items != 1) fail("a given target compares one item at a time");
  c10::NoGradGuard no_grad;
  append(estimate.detach().reshape({1, 2, n}));
}

void MixLossStream::fail(const std::string& message) {
  throw LossError("grafx.loss.shape", std::string(kWhat) + " in chunks: " + message);
}

int64_t MixLossStream::check_chunk(const at::Tensor& estimate) {
  const bool stereo = (estimate.dim() == 2 || estimate.dim() == 3) && estimate.size(-2) == 2;
  if (!stereo) {
    std::ostringstream s;
    s << "expected stereo chunks of shape B×2×T or 2×T, but got " << estimate.sizes();
    fail(s.str());
  }
  const int64_t items = estimate.dim() == 3 ? estimate.size(0) : 1, n = estimate.size(-1);
  if (n_items_ < 0) n_items_ = items, dtype_ = estimate.scalar_type();
  if (items != n_items_ || estimate.scalar_type() != dtype_)
    fail("expected every chunk to hold " + std::to_string(n_items_) + " item(s) of one type");
  if (n > n_samples_ - seen_)
    fail("expected " + std::to_string(n_samples_) + " samples in all, but got " +
         std::to_string(seen_ + n));
  return items;
}

void MixLossStream::append(const at::Tensor& rows) {
  // Samples before skip_samples are not part of the loss.
  const int64_t n    = rows.size(2),
                skip = std::clamp<int64_t>(loss_.options().skip_samples - seen_, 0, n);
  seen_ += n;
  if (skip == n) return;
  at::Tensor kept = rows.narrow(2, skip, n - skip);
  raw_            = raw_.defined() ? at::cat({raw_, kept}, 2) : kept;
  received_ += n - skip;
  compute_weighted();
  compute_frames();
}

void MixLossStream::compute_weighted() {
  const bool weighting = loss_.options_.a_weighting;
  const int64_t half   = weighting ? loss_.constants_->a_weighting.size(0) / 2 : 0;
  // Weighted sample j needs raw samples j − half … j + half (zero outside the signal).
  const int64_t end = received_ == length_ ? length_ : std::max(weighted_end_, received_ - half);
  if (end == weighted_end_) return;
  at::Tensor fresh;
  if (!weighting) {
    fresh = raw_.narrow(2, weighted_end_ - raw_start_, end - weighted_end_);
  } else {
    const int64_t from = std::max<int64_t>(0, weighted_end_ - half),
                  to   = std::min(received_, end + half);
    at::Tensor window  = raw_.narrow(2, from - raw_start_, to - from);
    window         = at::constant_pad_nd(window, {from - (weighted_end_ - half), end + half - to});
    at::Tensor fir = loss_.constant("a_weighting", loss_.constants_->a_weighting, raw_);
    // The samples whose whole FIR support lies in the window: its centre tap is lag 0. By FFT
    // or blocks, as the whole-signal path (a direct 101-tap conv1d was 10× slower).
    fresh = dsp::convolve(window, fir.view({1, 1, -1}), dsp::ConvolutionMode::kFull)
                .narrow(2, 2 * half, end - weighted_end_);
  }
  weighted_     = weighted_.defined() ? at::cat({weighted_, fresh}, 2) : fresh;
  weighted_end_ = end;
  // Keep the raw samples the next weighted ones need.
  const int64_t keep = std::max(raw_start_, end - half);
  raw_               = raw_.narrow(2, keep - raw_start_, received_ - keep);
  raw_start_         = keep;
}

void MixLossStream::compute_frames() {
  if (!weighted_.defined()) return;  // no weighted sample yet
  const auto& resolutions = loss_.constants_->resolutions;
  const bool complete     = weighted_end_ == length_;
  int64_t oldest          = weighted_end_;  // the first weighted sample still needed
  for (size_t r = 0; r < resolutions.size(); ++r) {
    const int64_t hop = resolutions[r].hop_size, half = resolutions[r].fft_size / 2;
    const int64_t n_frames = 1 + length_ / hop;
    // Frame f covers [f·hop − half, f·hop + half), reflected at both ends of the signal (the
    // reflection of −i is i, so the first frames need sample `half` too).
    const int64_t ready     = complete ? n_frames
                              : weighted_end_ > half
                                  ? std::min(n_frames, (weighted_end_ - half - 1) / hop + 1)
                                  : 0;
    const int64_t per_block = std::max<int64_t>(1, (int64_t(1) << 16) / hop);
    for (int64_t f0 = next_frame_[r]; f0 < ready; f0 += per_block) {
      const int64_t f1 = std::min(ready, f0 + per_block);
      const at::Tensor index =
          reflected_range(f0 * hop - half, (f1 - 1) * hop + half, length_) - weighted_start_;
      at::Tensor padded = weighted_.index_select(2, index.to(weighted_.device()));
      at::Tensor mel    = loss_.mel_frames(padded, 0, r);  // [2·B·4, frames, bands]
      if (collected_) {                                    // the target's rows alone
        collected_->mels[r].push_back(mel);
        continue;
      }
      mel                = mel.to(at::kDouble);
      const int64_t rows = n_items_ * 4;
      at::Tensor x       = mel.narrow(0, 0, rows), y;
      if (target_frames_) {
        y = target_frames_->mels[r].narrow(1, f0, f1 - f0).to(at::kDouble);
      } else {
        y = mel.narrow(0, rows, rows);
      }
      const at::Tensor squared = (y - x).pow(2), log_ratio = (y.log() - x.log()).abs();
      add_to_sum(difference_[r], squared.sum({1, 2}));
      add_to_sum(target_[r], y.pow(2).sum({1, 2}));
      add_to_sum(log_ratio_[r], log_ratio.sum({1, 2}));
      count_[r] += mel.size(1) * mel.size(2);
      if (parts_) add_parts(r, f0, f1, hop, squared, log_ratio);
    }
    next_frame_[r] = std::max(next_frame_[r], ready);
    oldest         = std::min(oldest, std::max<int64_t>(0, next_frame_[r] * hop - half - 1));
  }
  // Keep the weighted samples the remaining frames need (their reflections at the end included:
  // those lie at or after each frame's first sample, less one).
  oldest          = std::max(oldest, weighted_start_);
  weighted_       = weighted_.narrow(2, oldest - weighted_start_, weighted_end_ - oldest);
  weighted_start_ = oldest;
}

void MixLossStream::keep_parts() {
  if (seen_ > 0) fail("keep_parts() after the first samples");
  const size_t n_resolutions = count_.size();
  parts_                     = std::make_shared<Parts>();
  parts_->band_difference.resize(n_resolutions);
  parts_->band_log_ratio.resize(n_resolutions);
  parts_->second_difference.resize(n_resolutions);
  parts_->second_log_ratio.resize(n_resolutions);
}

std::pair<int64_t, int64_t> MixLossStream::seconds() const {
  const int64_t rate = loss_.options().sample_rate, skip = loss_.options().skip_samples;
  const int64_t first = skip / rate, last = (skip + length_ - 1) / rate;
  return {first, last - first + 1};
}

void MixLossStream::add_parts(size_t r, int64_t f0, int64_t f1, int64_t hop,
                              const at::Tensor& squared, const at::Tensor& log_ratio) {
  add_to_sum(parts_->band_difference[r], squared.sum(1));
  add_to_sum(parts_->band_log_ratio[r], log_ratio.sum(1));
  // Frame f is centred f·hop samples after the skipped ones: in that second of the song.
  const std::pair<int64_t, int64_t> span = seconds();
  const int64_t first = span.first, n_seconds = span.second;
  const int64_t rate = loss_.options().sample_rate, skip = loss_.options().skip_samples;
  std::vector<int64_t> second_of;
  for (int64_t f = f0; f < f1; ++f)
    second_of.push_back(std::clamp((f * hop + skip) / rate - first, int64_t(0), n_seconds - 1));
  const at::Tensor second = at::tensor(second_of, at::kLong).to(squared.device());
  auto into_seconds       = [&](at::Tensor& sum, const at::Tensor& per_frame) {
    if (!sum.defined()) sum = at::zeros({per_frame.size(0), n_seconds}, per_frame.options());
    sum.index_add_(1, second, per_frame);
  };
  into_seconds(parts_->second_difference[r], squared.sum(2));
  into_seconds(parts_->second_log_ratio[r], log_ratio.sum(2));
}

MixLossParts MixLossStream::parts(const std::vector<at::Tensor>& difference,
                                  const std::vector<at::Tensor>& log_ratio,
                                  std::vector<double> from, std::vector<double> to,
                                  std::vector<std::string> labels) const {
  at::Tensor per_channel;  // [B·4, K]: the parts of each item's d_c
  for (size_t r = 0; r < count_.size(); ++r) {
    const at::Tensor total = difference_[r].unsqueeze(1);
    const at::Tensor share = at::where(total > 0, difference[r] / total, at::zeros_like(total));
    const at::Tensor part  = (difference_[r] / target_[r]).sqrt().unsqueeze(1) * share +
                            log_ratio[r] / double(count_[r]);
    per_channel = per_channel.defined() ? per_channel + part : part;
  }
  per_channel             = (per_channel / double(count_.size())).view({n_items_, 4, -1});
  const MixLossOptions& o = loss_.options();
  MixLossParts p;
  p.labels   = std::move(labels);
  p.from     = std::move(from);
  p.to       = std::move(to);
  p.channels = per_channel.mean(0).t().contiguous();
  p.loss     = (o.lr_weight * (per_channel.select(1, 0) + per_channel.select(1, 1)) / 2 +
            o.mid_weight * per_channel.select(1, 2) + o.side_weight * per_channel.select(1, 3))
               .mean(0);
  return p;
}

MixLossBreakdown MixLossStream::breakdown(const std::vector<double>& band_edges_hz) const {
  check_band_edges(band_edges_hz);
  if (!parts_) fail("a breakdown needs keep_parts() before the first samples");
  MixLossBreakdown b;
  b.terms              = finish();
  const double nyquist = double(loss_.options().sample_rate) / 2;
  std::vector<double> lower, upper;  // the bands below Nyquist
  std::vector<std::string> band_labels;
  for (size_t k = 0; k < band_edges_hz.size() && band_edges_hz[k] < nyquist; ++k) {
    lower.push_back(band_edges_hz[k]);
    upper.push_back(k + 1 < band_edges_hz.size() ? std::min(band_edges_hz[k + 1], nyquist)
                                                 : nyquist);
    band_labels.push_back(frequency_text(lower.back()) + "–" + frequency_text(upper.back()));
  }
  std::vector<at::Tensor> band_difference, band_log_ratio;
  for (size_t r = 0; r < count_.size(); ++r) {
    const at::Tensor centres = loss_.constants_->band_centres_hz[r];
    std::vector<int64_t> band_of;
    for (int64_t m = 0; m < centres.size(0); ++m)
      band_of.push_back(
          int64_t(std::upper_bound(lower.begin(), lower.end(), centres[m].item<double>()) -
                  lower.begin()) -
          1);
    const at::Tensor index = at::tensor(band_of, at::kLong).to(parts_->band_difference[r].device());
    auto grouped           = [&](const at::Tensor& per_band) {
      return at::zeros({per_band.size(0), int64_t(lower.size())}, per_band.options())
          .index_add_(1, index, per_band);
    };
    band_difference.push_back(grouped(parts_->band_difference[r]));
    band_log_ratio.push_back(grouped(parts_->band_log_ratio[r]));
  }
  b.bands                       = parts(band_difference, band_log_ratio, lower, upper, band_labels);
  const auto [first, n_seconds] = seconds();
  std::vector<double> starts, ends;
  std::vector<std::string> second_labels;
  for (int64_t s = first; s < first + n_seconds; ++s) {
    starts.push_back(double(s));
    ends.push_back(double(s + 1));
    second_labels.push_back(std::to_string(s) + "–" + std::to_string(s + 1) + " s");
  }
  b.seconds =
      parts(parts_->second_difference, parts_->second_log_ratio, starts, ends, second_labels);
  return b;
}

MixLossTerms MixLossStream::finish() const {
  if (seen_ != n_samples_)
    throw LossError("grafx.loss.shape", std::string(kWhat) + " in chunks: expected " +
                                            std::to_string(n_samples_) + " samples, but got " +
                                            std::to_string(seen_));
  std::vector<at::Tensor> convergence, log_distance;  // per resolution, B×4
  for (size_t r = 0; r < count_.size(); ++r) {
    convergence.push_back((difference_[r] / target_[r]).sqrt().view({n_items_, 4}));
    log_distance.push_back((log_ratio_[r] / double(count_[r])).view({n_items_, 4}));
  }
  return loss_.assemble(at::stack(convergence).to(dtype_), at::stack(log_distance).to(dtype_));
}

}  // namespace grafx
