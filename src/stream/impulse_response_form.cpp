// The streaming form of linear processors: a node's impulse responses convolved block by block.

#include <grafx/error.h>
#include <grafx/stream/impulse_response_form.h>

#include <algorithm>

namespace grafx {
namespace {

/// This form's kind in programs, saved first (its number since programs of version 2).
constexpr int32_t kKind = 0;

}  // namespace
namespace {

/// A node's impulse responses as one convolver matrix: its inputs are the inlets' channels in
/// order, its outputs the outlets' (each input transformed once, each output once).
class ImpulseResponseStream : public NodeStream {
 public:
  ImpulseResponseStream(int64_t n_inputs, std::vector<int64_t> outlet_channels,
                        std::vector<dsp::StreamConvolverMatrix::Path> paths, int64_t latency,
                        int64_t max_block)
      : convolver_(n_inputs, count(outlet_channels), paths, max_block),
        outlet_channels_(std::move(outlet_channels)),
        paths_(std::move(paths)),
        latency_(latency),
        inputs_(size_t(convolver_.n_inputs())),
        outputs_(size_t(convolver_.n_outputs())) {}

  std::vector<int64_t> outlet_channels() const override { return outlet_channels_; }
  int64_t latency_samples() const override { return latency_; }
  bool takes(int64_t n_inlets, int64_t channels) const override {  // one input per channel
    return n_inlets * channels == convolver_.n_inputs();
  }

  void process(const InletBuffers& inlets, const OutletBuffers& outlets, int64_t n) override {
    size_t k = 0;
    for (const auto& inlet : inlets)
      for (const float* channel : inlet) inputs_[k++] = channel;
    k = 0;
    for (const auto& outlet : outlets)
      for (float* channel : outlet) outputs_[k++] = channel;
    convolver_.process(inputs_.data(), outputs_.data(), n);
  }
  void reset() override { convolver_.reset(); }
  std::vector<StreamBurst> bursts() const override {
    std::vector<StreamBurst> bursts;
    for (const auto& run : convolver_.level_runs())
      bursts.push_back({run.period, run.offset, run.nanoseconds});
    return bursts;
  }
  void set_phase(int64_t phase) override { convolver_.set_phase(phase); }

  void save(StreamWriter& out) const override {
    out.write(kKind);
    out.write(convolver_.n_inputs()), out.write(outlet_channels_);
    out.write(uint64_t(paths_.size()));
    for (const auto& path : paths_)
      out.write(path.input), out.write(path.output), out.write(path.taps);
    out.write(latency_);
  }

 private:
  static int64_t count(const std::vector<int64_t>& channels) {
    int64_t n = 0;
    for (int64_t c : channels) n += c;
    return n;
  }

  dsp::StreamConvolverMatrix convolver_;
  std::vector<int64_t> outlet_channels_;
  std::vector<dsp::StreamConvolverMatrix::Path> paths_;  // as made, for save()
  int64_t latency_;
  std::vector<const float*> inputs_;  // pointers of the block being processed
  std::vector<float*> outputs_;
};

}  // namespace

std::unique_ptr<NodeStream> impulse_response_stream(
    int64_t n_inputs, std::vector<int64_t> outlet_channels,
    std::vector<dsp::StreamConvolverMatrix::Path> paths, int64_t latency, int64_t max_block) {
  return std::make_unique<ImpulseResponseStream>(n_inputs, std::move(outlet_channels),
                                                 std::move(paths), latency, max_block);
}

namespace {

std::unique_ptr<NodeStream> load_impulse_response_stream(StreamReader& in, int64_t max_block) {
  const int64_t n_inputs             = in.read_count(1, 1 << 12);
  const std::vector<int64_t> outlets = in.read_vector<int64_t>();
  int64_t n_outputs                  = 0;
  for (int64_t c : outlets) {
    if (c < 1 || c > 1 << 12) in.corrupt("an outlet of " + std::to_string(c) + " channels");
    n_outputs += c;
  }
  std::vector<dsp::StreamConvolverMatrix::Path> paths(size_t(in.read_count(0, 1 << 20)));
  for (auto& path : paths) {
    path.input = in.read<int64_t>(), path.output = in.read<int64_t>();
    path.taps = in.read_vector<float>();
    if (path.input < 0 || path.input >= n_inputs || path.output < 0 || path.output >= n_outputs)
      in.corrupt("a path between channels the node has not");
    if (path.taps.empty()) in.corrupt("a path of no taps");
  }
  const int64_t latency = in.read_count(0, int64_t(1) << 40);
  // The convolver's blocks per input and output, and spectra of about twice its taps.
  double taps = 0;
  for (const auto& path : paths) taps += double(path.taps.size());
  in.allocate(16.0 * double(max_block + 64) * double(n_inputs + n_outputs) + 16.0 * taps);
  return impulse_response_stream(n_inputs, outlets, std::move(paths), latency, max_block);
}

const bool kRegistered = register_form(kKind, "impulse responses", load_impulse_response_stream);

}  // namespace

}  // namespace grafx
