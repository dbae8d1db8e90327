// The streaming form of the waveshapers (processors/distortion.h): the steps of
// Distortion::forward, sample by sample. No LibTorch here: the LV2 plugin runs this.

#include <grafx/stream/waveshaper_form.h>

#include <cmath>

namespace grafx {
namespace {

/// This form's kind in programs, saved first (its number since programs of version 2).
constexpr int32_t kKind = 3;

}  // namespace
namespace {

class WaveshaperStream : public NodeStream {
 public:
  using Curve = WaveshaperForm::Curve;
  explicit WaveshaperStream(WaveshaperForm form)
      : form_(std::move(form)),
        pre_gain_(form_.pre_gain_value),
        post_gain_(form_.post_gain_value),
        glide_(glide_samples(form_.sample_rate)) {
    controls_ = form_.controls;
  }

  std::vector<int64_t> outlet_channels() const override { return {form_.channels}; }

  void process(const InletBuffers& inlets, const OutletBuffers& outlets, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) {
      const float g = pre_gain_.next(), post = post_gain_.next();
      for (size_t c = 0; c < inlets[0].size(); ++c) {
        const float y = shape(inlets[0][c][i] * g);
        // The tanh curves undo their drive (or apply their own output gain); the polynomials
        // do neither, as forward.
        outlets[0][c][i] = form_.own_post_gain              ? y * post
                           : form_.pre_gain && tanh_curve() ? y / g
                                                            : y;
      }
    }
  }
  void reset() override {}
  void apply_control(size_t index, double value) override {
    (controls_[index].name == "drive_db" ? pre_gain_ : post_gain_)
        .to(float(std::pow(10.0, value / 20)), glide_);
  }

  void save(StreamWriter& out) const override {
    const WaveshaperForm& f = form_;
    out.write(kKind);
    out.write(f.curve), out.write(f.squash_terms), out.write(f.bias), out.write(f.pre_gain);
    out.write(f.own_post_gain), out.write(f.b), out.write(f.tanh_b);
    for (int side = 0; side < 2; ++side)
      out.write(f.k[side]), out.write(f.h[side]), out.write(f.t[side]);
    out.write(f.weights), out.write(f.pre_gain_value), out.write(f.post_gain_value);
    out.write(f.channels), out.write(f.sample_rate);
    write_controls(out, f.controls);
  }

 private:
  bool tanh_curve() const {
    return form_.curve == Curve::kTanh || form_.curve == Curve::kPiecewiseTanh;
  }
  float shape(float u) const {
    const WaveshaperForm& f = form_;
    switch (f.curve) {
      case Curve::kTanh:
        return f.bias ? std::tanh(u + f.b) - f.tanh_b : std::tanh(u);
      case Curve::kPiecewiseTanh: {
        auto side = [&](int s, float v) {
          return (1 - f.t[s] * f.t[s]) / f.h[s] * std::tanh(f.h[s] * v);
        };
        if (u > f.k[0]) return side(0, u - f.k[0]) + f.t[0];
        if (u < -f.k[1]) return side(1, u + f.k[1]) - f.t[1];
        return std::tanh(u);
      }
      default: {  // power and Chebyshev: Σ w_k·term(u^k or T_k(u))
        auto term      = [&](float v) { return f.squash_terms ? std::tanh(v) : v; };
        float previous = 1, current = u;
        float y = f.weights[0] * term(previous) + f.weights[1] * term(current);
        for (size_t k = 2; k < f.weights.size(); ++k) {
          const float next = f.curve == Curve::kPower ? current * u : 2 * u * current - previous;
          y += f.weights[k] * term(next);
          previous = current, current = next;
        }
        return y;
      }
    }
  }

  WaveshaperForm form_;
  Glide pre_gain_, post_gain_;
  int64_t glide_;
};

}  // namespace

std::unique_ptr<NodeStream> waveshaper_stream(WaveshaperForm form) {
  return std::make_unique<WaveshaperStream>(std::move(form));
}

namespace {

std::unique_ptr<NodeStream> load_waveshaper_stream(StreamReader& in, int64_t) {
  WaveshaperForm f;
  f.curve = in.read<WaveshaperForm::Curve>();
  if (int32_t(f.curve) < 0 || f.curve > WaveshaperForm::Curve::kChebyshev)
    in.corrupt("an unknown waveshaper curve");
  f.squash_terms = in.read<bool>(), f.bias = in.read<bool>(), f.pre_gain = in.read<bool>();
  f.own_post_gain = in.read<bool>(), f.b = in.read<float>(), f.tanh_b = in.read<float>();
  for (int side = 0; side < 2; ++side)
    f.k[side] = in.read<float>(), f.h[side] = in.read<float>(), f.t[side] = in.read<float>();
  f.weights = in.read_vector<float>();
  const bool polynomial =
      f.curve == WaveshaperForm::Curve::kPower || f.curve == WaveshaperForm::Curve::kChebyshev;
  if (polynomial && f.weights.size() < 2) in.corrupt("a polynomial of fewer than two terms");
  f.pre_gain_value = in.read<float>(), f.post_gain_value = in.read<float>();
  f.channels    = in.read_count(1, 8);
  f.sample_rate = in.read_count(1, 1 << 24);
  f.controls    = read_controls(in);
  return waveshaper_stream(std::move(f));
}

const bool kRegistered = register_form(kKind, "waveshaper", load_waveshaper_stream);

}  // namespace

}  // namespace grafx
