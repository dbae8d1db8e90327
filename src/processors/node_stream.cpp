// The streaming forms shared by many processors (impulse responses, channel matrices), the
// automation curves they follow, and saved forms read back. No LibTorch here: the LV2 plugin
// runs this.

#include <grafx/error.h>
#include <grafx/processors/node_stream.h>

#include "processors/stream_forms.h"

#include <algorithm>
#include <cmath>

namespace grafx {

void StreamWriter::write(const std::string& text) {
  write(uint64_t(text.size()));
  bytes_ += text;
}

const char* StreamReader::take(size_t n) {
  if (n > left_) corrupt("the data end early");
  const char* at = data_;
  data_ += n, left_ -= n;
  return at;
}

std::string StreamReader::read_string() {
  const std::vector<char> text = read_vector<char>();
  return std::string(text.begin(), text.end());
}

double StreamReader::read_bound() {
  double bound;
  std::memcpy(&bound, take(sizeof bound), sizeof bound);
  if (std::isnan(bound)) corrupt("a range's end that is not a number");
  return bound;
}

int64_t StreamReader::read_count(int64_t minimum, int64_t maximum) {
  const int64_t n = read<int64_t>();
  if (n < minimum || n > maximum)
    corrupt("a count of " + std::to_string(n) + " where " + std::to_string(minimum) + " to " +
            std::to_string(maximum) + " fit");
  return n;
}

void StreamReader::allocate(double bytes) {
  budget_ -= bytes;
  if (!(budget_ >= 0)) corrupt("it would allocate more memory than its data could need");
}

void StreamReader::corrupt(const std::string& what) {
  throw RenderError("grafx.stream.program", "not a stream program of this version: " + what);
}

void write_controls(StreamWriter& out, const std::vector<StreamControl>& controls) {
  out.write(uint64_t(controls.size()));
  for (const StreamControl& c : controls) {
    out.write(c.name), out.write(c.unit), out.write(c.description);
    out.write(c.minimum), out.write(c.maximum), out.write(c.value);
  }
}

std::vector<StreamControl> read_controls(StreamReader& in) {
  std::vector<StreamControl> controls(size_t(in.read_count(0, 1 << 16)));
  for (StreamControl& c : controls) {
    c.name = in.read_string(), c.unit = in.read_string(), c.description = in.read_string();
    c.minimum = in.read_bound(), c.maximum = in.read_bound(), c.value = in.read<double>();
    if (!(c.minimum <= c.value && c.value <= c.maximum)) in.corrupt("a control out of its range");
  }
  return controls;
}

std::unique_ptr<NodeStream> load_node_stream(StreamReader& in, int64_t max_block) {
  switch (in.read<NodeStreamKind>()) {
    case NodeStreamKind::kImpulseResponses:
      return load_impulse_response_stream(in, max_block);
    case NodeStreamKind::kMatrix:
      return load_matrix_stream(in, max_block);
    case NodeStreamKind::kDynamics:
      return load_dynamics_stream(in, max_block);
    case NodeStreamKind::kWaveshaper:
      return load_waveshaper_stream(in, max_block);
    case NodeStreamKind::kContainer:
      return load_container_stream(in, max_block);
  }
  in.corrupt("an unknown kind of streaming form");
}

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
    out.write(NodeStreamKind::kImpulseResponses);
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

namespace {

class MatrixStream : public NodeStream {
 public:
  /// The entries' controls are `n_values` values: those of `controls` (a host's), or, where
  /// the values follow `curve`, its elements (and there are no controls).
  MatrixStream(int64_t n_inputs, int64_t n_outputs, int64_t n_values,
               std::vector<StreamControl> controls, std::vector<MatrixEntry> entries,
               int64_t channels, int64_t glide, std::shared_ptr<const StreamCurve> curve,
               std::string raw_name, int64_t input_latency)
      : n_inputs_(n_inputs),
        n_outputs_(n_outputs),
        channels_(channels),
        glide_samples_(glide),
        matrix_(std::move(entries)),
        values_(size_t(n_values)),
        targets_(matrix_.size()),
        curve_(std::move(curve)),
        raw_name_(std::move(raw_name)),
        input_latency_(input_latency) {
    controls_ = std::move(controls);
    for (size_t i = 0; i < controls_.size(); ++i) values_[i] = controls_[i].value;
    matrix_of_values();
    for (float entry : targets_) entries_.emplace_back(entry);
    if (curve_) followed_curves_ = {raw_name_};
  }

  std::vector<int64_t> outlet_channels() const override {
    return {scalar() ? channels_ : n_outputs_};
  }
  bool takes(int64_t n_inlets, int64_t channels) const override {
    // One gain maps each channel to itself; a matrix reads what it is given (mono as dual mono).
    return n_inlets >= 1 && channels >= 1 && (!scalar() || channels == channels_);
  }

  void process(const InletBuffers& inlets, const OutletBuffers& outlets, int64_t n) override {
    const auto& x = inlets.front();
    if (curve_) return process_automated(x, outlets.front(), n);
    if (scalar()) {  // one gain on every channel
      Glide& gain = entries_.front();
      for (int64_t i = 0; i < n; ++i) {
        const float g = gain.next();
        for (size_t c = 0; c < x.size(); ++c) outlets.front()[c][i] = g * x[c][i];
      }
      return;
    }
    const int64_t last_input = int64_t(x.size()) - 1;  // mono read as dual mono
    if (std::none_of(entries_.begin(), entries_.end(),
                     [](const Glide& g) { return g.gliding(); })) {
      for (int64_t o = 0; o < n_outputs_; ++o) {  // still: the same sums, in loops that vectorise
        float* y = outlets.front()[size_t(o)];
        std::fill(y, y + n, 0.0f);
        for (int64_t c = 0; c < n_inputs_; ++c) {
          const float g  = entries_[size_t(o * n_inputs_ + c)].value();
          const float* u = x[size_t(std::min(c, last_input))];
          for (int64_t i = 0; i < n; ++i) y[i] += g * u[i];
        }
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < n_outputs_; ++o) {
        float sum = 0;
        for (int64_t c = 0; c < n_inputs_; ++c)
          sum += entries_[size_t(o * n_inputs_ + c)].next() * x[size_t(std::min(c, last_input))][i];
        outlets.front()[size_t(o)][i] = sum;
      }
  }
  void reset() override { clock_ = 0; }
  void locate(int64_t clock) override { clock_ = clock; }
  void apply_control(size_t index, double value) override {
    values_[index] = value;
    matrix_of_values();
    for (size_t e = 0; e < entries_.size(); ++e) entries_[e].to(targets_[e], glide_samples_);
  }

  void save(StreamWriter& out) const override {
    out.write(NodeStreamKind::kMatrix);
    out.write(n_inputs_), out.write(n_outputs_), out.write(channels_), out.write(glide_samples_);
    out.write(int64_t(values_.size()));
    write_controls(out, controls_);
    out.write(matrix_);
    StreamCurve::save(out, curve_);
    if (curve_) out.write(raw_name_), out.write(input_latency_);
  }
  static std::unique_ptr<NodeStream> load(StreamReader& in) {
    const int64_t n_inputs = in.read_count(1, 8), n_outputs = in.read_count(1, 8);
    const int64_t channels = in.read_count(1, 8), glide = in.read_count(0, int64_t(1) << 40);
    const int64_t n_values              = in.read_count(0, 64);
    std::vector<StreamControl> controls = read_controls(in);
    if (int64_t(controls.size()) > n_values) in.corrupt("more controls than values");
    std::vector<MatrixEntry> entries = in.read_vector<MatrixEntry>();
    if (int64_t(entries.size()) != n_inputs * n_outputs) in.corrupt("a matrix of another size");
    for (const MatrixEntry& e : entries) {
      if (e.control >= n_values) in.corrupt("an entry of no value");
      if (!std::isfinite(e.offset) || !std::isfinite(e.scale))
        in.corrupt("a number that is not finite");
    }
    std::shared_ptr<const StreamCurve> curve = StreamCurve::load(in);
    std::string raw_name;
    int64_t input_latency = 0;
    if (curve) {
      raw_name      = in.read_string();
      input_latency = in.read_count(0, int64_t(1) << 40);
      if (curve->elements() < n_values || !controls.empty())
        in.corrupt("a curve of fewer values than its matrix, or a host's controls beside it");
    }
    return std::make_unique<MatrixStream>(n_inputs, n_outputs, n_values, std::move(controls),
                                          std::move(entries), channels, glide, std::move(curve),
                                          raw_name, input_latency);
  }

 private:
  bool scalar() const { return n_inputs_ == 1 && n_outputs_ == 1; }
  void matrix_of_values() {
    for (size_t e = 0; e < matrix_.size(); ++e) {
      const MatrixEntry& m = matrix_[e];
      targets_[e]          = float(
          m.control < 0 ? m.offset
                                 : m.offset + m.scale * std::pow(10.0, values_[size_t(m.control)] / 20));
    }
  }

  /// The matrix of each sample from the curve's values at that sample's song time.
  void process_automated(const std::vector<const float*>& x, const std::vector<float*>& y,
                         int64_t n) {
    const int64_t last_input = int64_t(x.size()) - 1;
    for (int64_t i = 0; i < n; ++i, ++clock_) {
      for (size_t e = 0; e < values_.size(); ++e)
        values_[e] = double(curve_->at(clock_ - input_latency_, int64_t(e))) * 20 /
                     std::log(10.0);  // of log gains
      matrix_of_values();
      for (size_t o = 0; o < y.size(); ++o) {
        float sum = 0;
        if (scalar()) {
          y[o][i] = targets_[0] * x[o][i];
          continue;
        }
        for (int64_t c = 0; c < n_inputs_; ++c)
          sum +=
              targets_[size_t(int64_t(o) * n_inputs_ + c)] * x[size_t(std::min(c, last_input))][i];
        y[o][i] = sum;
      }
    }
  }

  int64_t n_inputs_, n_outputs_, channels_, glide_samples_;
  std::vector<MatrixEntry> matrix_;
  std::vector<double> values_;
  std::vector<float> targets_;
  std::vector<Glide> entries_;
  std::shared_ptr<const StreamCurve> curve_;  // where the values follow automation
  std::string raw_name_;
  int64_t input_latency_ = 0, clock_ = 0;
};

}  // namespace

std::unique_ptr<NodeStream> load_matrix_stream(StreamReader& in, int64_t) {
  return MatrixStream::load(in);
}

std::unique_ptr<NodeStream> matrix_stream(int64_t n_inputs, int64_t n_outputs,
                                          std::vector<StreamControl> controls,
                                          std::vector<MatrixEntry> entries,
                                          const StreamSetup& setup, const std::string& raw_name) {
  auto curve             = setup.curves.find(raw_name);
  const bool automated   = curve != setup.curves.end();
  const int64_t n_values = int64_t(controls.size());
  if (automated) controls.clear();  // the curve sets the values, not a host
  return std::make_unique<MatrixStream>(
      n_inputs, n_outputs, n_values, std::move(controls), std::move(entries),
      setup.inlet_channels.front(), glide_samples(setup.sample_rate),
      automated ? curve->second : nullptr, raw_name, setup.input_latency);
}

StreamCurve::StreamCurve(std::vector<float> points, int64_t elements, double samples_per_point)
    : points_(std::move(points)), elements_(elements), samples_per_point_(samples_per_point) {
  for (size_t i = 0; i < points_.size() / size_t(elements); ++i)
    positions_.push_back(double(i) * samples_per_point);
}

void StreamCurve::save(StreamWriter& out, const std::shared_ptr<const StreamCurve>& curve) {
  out.write(curve != nullptr);
  if (curve)
    out.write(curve->points_), out.write(curve->elements_), out.write(curve->samples_per_point_);
}

std::shared_ptr<const StreamCurve> StreamCurve::load(StreamReader& in) {
  if (!in.read<bool>()) return nullptr;
  std::vector<float> points = in.read_vector<float>();
  const int64_t elements    = in.read_count(1, 1 << 16);
  const double spacing      = in.read<double>();
  if (points.empty() || points.size() % size_t(elements) != 0 || !(spacing > 0))
    in.corrupt("an automation curve of no points");
  return std::make_shared<StreamCurve>(std::move(points), elements, spacing);
}

float StreamCurve::at(int64_t sample, int64_t element) const {
  // As dsp::piecewise_linear: the points either side, and at::lerp's two-sided form in float.
  const double t   = double(sample);
  const auto next  = std::upper_bound(positions_.begin(), positions_.end(), t) - positions_.begin();
  const auto last  = int64_t(positions_.size()) - 1;
  const auto below = std::max<int64_t>(next - 1, 0), above = std::min<int64_t>(next, last);
  const float lo = points_[size_t(below * elements_ + element)];
  if (below == above) return lo;
  const float hi = points_[size_t(above * elements_ + element)];
  const float w  = float((t - positions_[size_t(below)]) /
                        (positions_[size_t(above)] - positions_[size_t(below)]));
  return w < 0.5f ? lo + w * (hi - lo) : hi - (hi - lo) * (1 - w);
}

}  // namespace grafx
