// The streaming form of memoryless channel matrices: gains, pans, side gains and sends.

#include <grafx/error.h>
#include <grafx/stream/matrix_form.h>

#include <algorithm>
#include <cmath>

namespace grafx {
namespace {

/// This form's kind in programs, saved first (its number since programs of version 2).
constexpr int32_t kKind = 1;

}  // namespace
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
    out.write(kKind);
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

namespace {

std::unique_ptr<NodeStream> load_matrix_stream(StreamReader& in, int64_t) {
  return MatrixStream::load(in);
}

const bool kRegistered = register_form(kKind, "channel matrix", load_matrix_stream);

}  // namespace

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

}  // namespace grafx
