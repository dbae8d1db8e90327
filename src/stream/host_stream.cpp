#include <grafx/error.h>
#include <grafx/stream/host_stream.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace grafx {

HostStream::HostStream(Stream stream, int64_t host_rate)
    : stream_(std::move(stream)), host_rate_(host_rate) {
  const int64_t sources = stream_.n_sources() * stream_.source_channels();
  const int64_t outputs = stream_.n_outputs() * stream_.output_channels();
  sources_.resize(size_t(sources));
  outputs_.resize(size_t(outputs));
  const int64_t rate = stream_.sample_rate();
  if (host_rate < 1)
    throw RenderError("grafx.stream.options",
                      "expected a host rate of 1 Hz or more, but got " + std::to_string(host_rate));
  latency_ = stream_.latency_samples();
  step_    = stream_.max_block();
  if (host_rate != rate) set_up_conversions(sources, outputs);
  dry_delays_.assign(size_t(outputs), DelayLine(latency_));
  dry_.assign(size_t(outputs), std::vector<float>(size_t(step_), 0.0f));
  reset();
}

void HostStream::set_up_conversions(int64_t sources, int64_t outputs) {
  const int64_t rate = stream_.sample_rate();
  if (sources == 0 || outputs == 0)
    throw RenderError("grafx.stream.options",
                      "a stream without sources or outputs runs at its own rate only");
  std::shared_ptr<const dsp::ResamplerFilter> filter;
  try {
    filter = std::make_shared<dsp::ResamplerFilter>(host_rate_, rate);
  } catch (const std::invalid_argument& e) {
    throw RenderError("grafx.stream.options", "a stream made at " + std::to_string(rate) +
                                                  " Hz cannot run at " +
                                                  std::to_string(host_rate_) + " Hz: " + e.what());
  }
  for (int64_t k = 0; k < sources; ++k) down_.emplace_back(filter, host_rate_, rate);
  for (int64_t k = 0; k < outputs; ++k) up_.emplace_back(filter, rate, host_rate_);
  // Host samples per stream sample: M/L. The stream's latency is padded to a multiple of L
  // samples, and the filter's round trip, (K − 1) samples of the common rate, is a multiple of
  // its host samples (K − 1 a multiple of L): the whole latency is in whole host samples.
  const int64_t g = std::gcd(host_rate_, rate), l = rate / g, m = host_rate_ / g;
  const int64_t padded = (stream_.latency_samples() + l - 1) / l * l;
  align_.assign(size_t(outputs), DelayLine(padded - stream_.latency_samples()));
  // Steps of as many host samples as convert to one block of the stream (n·L/M + 1 at most).
  step_ = std::max<int64_t>(1, (stream_.max_block() - 1) * m / l);
  converted_.assign(size_t(sources), std::vector<float>(size_t(down_[0].max_outputs(step_))));
  processed_.assign(size_t(outputs), std::vector<float>(converted_[0].size()));
  scratch_.assign(size_t(up_[0].max_outputs(int64_t(converted_[0].size()))), 0.0f);
  // Outputs completed after N host samples, B(A(N)), run ahead of N by a pattern that repeats
  // every m host samples: prime with the most it falls behind.
  for (int64_t n = 1; n <= 2 * m + 2; ++n)
    primed_ = std::max(primed_, n - up_[0].outputs_after(down_[0].outputs_after(n)));
  ring_.assign(size_t(outputs), std::vector<float>(size_t(primed_ + step_ + scratch_.size() + 1)));
  latency_ = primed_ + (int64_t(filter->taps.size()) - 1) / l + padded * m / l;
}

void HostStream::reset() noexcept {
  stream_.reset();
  for (auto& r : down_) r.reset();
  for (auto& r : up_) r.reset();
  for (DelayLine& d : align_) d.reset();
  for (auto& ring : ring_) std::fill(ring.begin(), ring.end(), 0.0f);
  ring_start_ = 0, ring_count_ = primed_;
  host_done_ = stream_done_ = 0;
  for (DelayLine& d : dry_delays_) d.reset();
  processed_share_ = Glide(bypassed_ ? 0.0f : 1.0f);  // bypassed or not, without a glide
}

void HostStream::set_bypassed(bool bypassed) noexcept {
  if (bypassed == bypassed_) return;
  bypassed_ = bypassed;
  processed_share_.to(bypassed ? 0.0f : 1.0f, glide_samples(host_rate_));
}

void HostStream::take_dry(const float* const* sources, int64_t start, int64_t n) noexcept {
  const int64_t channels = stream_.source_channels(), per_output = stream_.output_channels();
  for (size_t o = 0; o < dry_delays_.size(); ++o) {
    const int64_t c = std::min(int64_t(o) % per_output, channels - 1);  // its sources' channel
    float* dry      = dry_[o].data();
    std::fill_n(dry, n, 0.0f);
    for (int64_t k = 0; k < stream_.n_sources(); ++k)
      for (int64_t i = 0; i < n; ++i) dry[i] += sources[k * channels + c][start + i];
    for (int64_t i = 0; i < n; ++i)  // contained as the stream's input is: not finite, silent
      dry[i] = std::isfinite(dry[i]) ? dry[i] : 0.0f;
    dry_delays_[o].process(dry, dry, n);
  }
}

void HostStream::mix_dry(float* const* outputs, int64_t start, int64_t n) noexcept {
  for (size_t o = 0; o < dry_delays_.size(); ++o) {
    if (!bypassed_ && !processed_share_.gliding()) break;
    const float* dry = dry_[o].data();
    Glide share      = processed_share_;  // the same glide for every channel
    float* y         = outputs[o] + start;
    for (int64_t i = 0; i < n; ++i) {
      const float s = share.next();  // 0 and 1 exactly at the glides' ends
      if (s < 1) y[i] = dry[i] + s * (y[i] - dry[i]);
    }
  }
  for (int64_t i = 0; i < n && processed_share_.gliding(); ++i) processed_share_.next();
}

void HostStream::locate(int64_t frame) noexcept {
  // Host sample host_done_ is song frame `frame`, and stream sample s lies at host sample s·M/L,
  // so stream sample stream_done_ is song sample stream_done_ + (frame − host_done_)·L/M.
  // Counted from the reset, so that locating where the song already is changes nothing.
  const int64_t rate = stream_.sample_rate(), g = std::gcd(host_rate_, rate);
  const int64_t l = rate / g, m = host_rate_ / g;
  const __int128 shift   = (__int128(frame) - host_done_) * l;
  const __int128 nearest = (shift >= 0 ? shift + m / 2 : shift - m / 2) / m;
  const __int128 limit   = Stream::kLatestSongSample;
  stream_.locate(int64_t(std::clamp<__int128>(stream_done_ + nearest, -limit, limit)));
}

int64_t HostStream::stream_block(int64_t host_block, int64_t stream_rate, int64_t host_rate) {
  if (host_block < 1 || stream_rate < 1 || host_rate < 1 || stream_rate == host_rate)
    return host_block;
  const int64_t g = std::gcd(host_rate, stream_rate), l = stream_rate / g, m = host_rate / g;
  return std::min<int64_t>((host_block * l + m - 1) / m + 1, 1 << 20);  // (block − 1)·M/L ≥ it
}

void HostStream::process(const float* const* sources, float* const* outputs, int64_t n) noexcept {
  const int64_t block = stream_.max_block();
  for (int64_t start = 0; start < n;) {
    const int64_t step = std::min(step_, n - start);
    // A host may process in place (an output on an input's buffer): the step's inputs are read,
    // for the bypass's dry sum and for the stream, before any of its outputs is written.
    take_dry(sources, start, step);
    if (down_.empty()) {  // the stream's own rate
      for (size_t k = 0; k < sources_.size(); ++k) sources_[k] = sources[k] + start;
      for (size_t k = 0; k < outputs_.size(); ++k) outputs_[k] = outputs[k] + start;
      stream_.process(sources_.data(), outputs_.data(), step);
      mix_dry(outputs, start, step);
      start += step, host_done_ += step, stream_done_ += step;
      continue;
    }
    int64_t converted = 0;
    for (size_t k = 0; k < down_.size(); ++k)
      converted = down_[k].process(sources[k] + start, step, converted_[k].data());
    for (int64_t at = 0; at < converted;) {  // the stream in its blocks
      const int64_t piece = std::min(block, converted - at);
      for (size_t k = 0; k < sources_.size(); ++k) sources_[k] = converted_[k].data() + at;
      for (size_t k = 0; k < outputs_.size(); ++k) outputs_[k] = processed_[k].data() + at;
      stream_.process(sources_.data(), outputs_.data(), piece);
      at += piece;
    }
    const int64_t size = int64_t(ring_.empty() ? 1 : ring_[0].size());
    int64_t back       = 0;
    for (size_t o = 0; o < up_.size(); ++o) {
      align_[o].process(processed_[o].data(), processed_[o].data(), converted);
      back = up_[o].process(processed_[o].data(), converted, scratch_.data());
      for (int64_t i = 0; i < back; ++i)
        ring_[o][size_t((ring_start_ + ring_count_ + i) % size)] = scratch_[size_t(i)];
    }
    ring_count_ += back;
    for (size_t o = 0; o < ring_.size(); ++o)
      for (int64_t i = 0; i < step; ++i)
        outputs[o][start + i] = ring_[o][size_t((ring_start_ + i) % size)];
    ring_start_ = (ring_start_ + step) % size, ring_count_ -= step;
    mix_dry(outputs, start, step);
    start += step, host_done_ += step, stream_done_ += converted;
  }
}

}  // namespace grafx
