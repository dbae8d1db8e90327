#pragma once
/// A stream as a host runs it (stream/stream.h): any number of samples per call, cut into steps
/// that make one block of the stream each, at the host's sample rate. Where the host runs at
/// another rate than the stream was made for, each source channel is converted to the stream's rate
/// and each output channel back (stream/resampler.h), and the latency, the stream's and the
/// conversions', stays a whole number of host samples: the outputs equal the conversion back of the
/// offline render of the converted sources, delayed by latency_samples() (a test checks this).
///
///   HostStream host(Stream::load(program), 44100);  // a stream made at 30 kHz
///   host.process(inputs, outputs, n);               // any n; allocates nothing
///
/// Plain C++ (no LibTorch): the LV2 plugin runs it.

#include <grafx/stream/form.h>
#include <grafx/stream/resampler.h>
#include <grafx/stream/stream.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace grafx {

class HostStream {
 public:
  /// Throws RenderError [grafx.stream.options] for a host rate below 1 Hz or one whose ratio to
  /// the stream's cannot be converted (their common rate above 2^32 Hz, or a stream without
  /// sources or outputs).
  HostStream(Stream stream, int64_t host_rate);

  /// The stream's max_block for a host that calls with `host_block` samples: then each call of
  /// that many host samples is one call of the stream, of about host_block·stream_rate/host_rate
  /// samples (its convolutions are planned for calls of max_block: close enough).
  static int64_t stream_block(int64_t host_block, int64_t stream_rate, int64_t host_rate);

  /// n samples (any n ≥ 0) of each source channel into each output channel, as
  /// Stream::process lays them out. Allocates nothing, throws nothing.
  void process(const float* const* sources, float* const* outputs, int64_t n) noexcept;
  /// Back to silence, as just made (bypassed if it was, without a glide).
  void reset() noexcept;
  /// The host's transport moved: the next host sample is song frame `frame` (host samples).
  /// Moves the stream's clock to the stream sample that is, to the nearest, whatever happened
  /// since the reset (Stream::locate: states are kept). Allocates nothing, throws nothing.
  void locate(int64_t frame) noexcept;
  /// Bypassed, the outputs glide (over kGlideSeconds) to the sources' sum delayed by the latency
  /// (each output channel the sum of the sources' same channel, a mono source's in every one),
  /// as a host's bypass of a plugin with latency would play them, and back when not; the stream
  /// runs on meanwhile, so that it comes back where it would be. Allocates nothing.
  void set_bypassed(bool bypassed) noexcept;
  /// Host samples by which the outputs lag (those of the offline render, at the same rate).
  int64_t latency_samples() const { return latency_; }
  int64_t host_rate() const { return host_rate_; }
  bool converts() const { return !down_.empty(); }
  Stream& stream() { return stream_; }
  const Stream& stream() const { return stream_; }

 private:
  /// Sets up the conversions to the stream's rate and back (the constructor's, where they differ).
  void set_up_conversions(int64_t sources, int64_t outputs);
  /// The bypass's dry signal of host samples [start, start + n): per output channel the
  /// sources' sum, delayed; read before any output of those samples is written.
  void take_dry(const float* const* sources, int64_t start, int64_t n) noexcept;
  /// It mixed into the outputs where bypassed or gliding.
  void mix_dry(float* const* outputs, int64_t start, int64_t n) noexcept;

  Stream stream_;
  int64_t host_rate_, latency_ = 0;
  std::vector<const float*> sources_;  // pointers of one block
  std::vector<float*> outputs_;
  // Where the rates differ: per source channel, per output channel.
  std::vector<dsp::StreamResampler> down_, up_;
  std::vector<std::vector<float>> converted_, processed_;  // at the stream's rate
  std::vector<DelayLine> align_;  // to a stream latency of whole host samples
  std::vector<float> scratch_;
  // Per output channel, a ring of host samples converted back, primed with silence so that a
  // call always finds as many as it returns.
  std::vector<std::vector<float>> ring_;
  int64_t primed_ = 0, ring_start_ = 0, ring_count_ = 0;
  int64_t step_ = 0;  // host samples per step: as many as make one block of the stream
  // Host samples and stream samples processed since the reset: stream sample s converts host
  // samples up to s·M/L.
  int64_t host_done_ = 0, stream_done_ = 0;
  // The bypass: the processed share of the outputs, and per output channel the sources' sum
  // delayed by the latency (dry_ holds a step of each).
  bool bypassed_ = false;
  Glide processed_share_{1.0f};
  std::vector<DelayLine> dry_delays_;
  std::vector<std::vector<float>> dry_;
};

}  // namespace grafx
