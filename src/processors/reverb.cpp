#include <grafx/dsp/convolution.h>
#include <grafx/dsp/forward_mode.h>
#include <grafx/dsp/signal.h>
#include <grafx/processors/reverb.h>

#include "processors/units.h"

#include "dsp/tangents.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <limits>

namespace grafx {
namespace {

constexpr double kMaskExponent = 1.0 / 8;  // GRAFX: mask = exp(log M / 8)

/// The masked noise spectrum noise[c, m, b]·exp(κ·(initial[n, c, b] − decay[n, c, b]·m +
/// envelope[n, c, m])), N×C×M×B complex, for real N×C×B initial levels and decays, N×C×M
/// envelopes and C'×M×B complex noise (its first C rows), in ATen operations.
at::Tensor masked_noise_composed(const at::Tensor& initial, const at::Tensor& decay,
                                 const at::Tensor& envelope, const at::Tensor& noise) {
  const at::Tensor frames = at::arange(noise.size(1), initial.options()).unsqueeze(-1);
  const at::Tensor log_mask =
      initial.unsqueeze(2) - decay.unsqueeze(2) * frames + envelope.unsqueeze(-1);
  return noise.narrow(0, 0, initial.size(1)) * (log_mask * kMaskExponent).exp();
}

/// Rows r = (n, c) of the log masks κ·(initial − decay·m + envelope[m]), M×B each.
template <typename T>
void write_log_masks(const T* initial, const T* decay, const T* envelope, T* out, int64_t rows,
                     int64_t frames, int64_t bins) {
  const T kappa = T(kMaskExponent);
  at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t m = 0; m < frames; ++m) {
        const T *a = initial + r * bins, *d = decay + r * bins, e = envelope[r * frames + m];
        T* o = out + (r * frames + m) * bins;
#pragma omp simd
        for (int64_t b = 0; b < bins; ++b) o[b] = kappa * (a[b] - d[b] * T(m) + e);
      }
  });
}

/// Row r = (n, c) of the spectrum, C channels: noise row c (its first C rows, M×B complex each,
/// interleaved) times the masks.
template <typename T>
void mask_noise(const T* noise, const T* mask, T* out, int64_t rows, int64_t channels,
                int64_t frames, int64_t bins) {
  at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t size = frames * bins;
      const T *z = noise + (r % channels) * 2 * size, *g = mask + r * size;
      T* o = out + r * 2 * size;
#pragma omp simd
      for (int64_t i = 0; i < size; ++i) {
        o[2 * i]     = z[2 * i] * g[i];
        o[2 * i + 1] = z[2 * i + 1] * g[i];
      }
    }
  });
}

/// With t = κ·Re(conj(s)·g) of spectrum s and its gradient g (interleaved complex), row r = (n,
/// c): ∂initial = Σ_m t, ∂decay = −Σ_m m·t, ∂envelope[m] = Σ_b t.
template <typename T>
void mask_gradients(const T* spectrum, const T* grad, T* d_initial, T* d_decay, T* d_envelope,
                    int64_t rows, int64_t frames, int64_t bins) {
  const T kappa = T(kMaskExponent);
  at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      T *di = d_initial + r * bins, *dd = d_decay + r * bins;
      std::fill(di, di + bins, T(0));
      std::fill(dd, dd + bins, T(0));
      for (int64_t m = 0; m < frames; ++m) {
        const T *s = spectrum + (r * frames + m) * 2 * bins,
                *g = grad + (r * frames + m) * 2 * bins;
        T sum      = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t b = 0; b < bins; ++b) {
          const T t = kappa * (s[2 * b] * g[2 * b] + s[2 * b + 1] * g[2 * b + 1]);
          di[b] += t;
          dd[b] -= T(m) * t;
          sum += t;
        }
        d_envelope[r * frames + m] = sum;
      }
    }
  });
}

/// masked_noise_composed as one Function on the CPU: forward, the log masks in one pass, ATen's
/// vectorised exponential, the product in one pass; backward, one pass over the spectrum and its
/// gradient (mask_gradients), where autograd replays about eight passes over N×C×M×B. A
/// backward pass that is recorded (create_graph) or carries tangents differentiates the
/// composition instead.
struct MaskedNoise : public torch::autograd::Function<MaskedNoise> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& initial,
                            const at::Tensor& decay, const at::Tensor& envelope,
                            const at::Tensor& noise) {
    const at::Tensor a = initial.contiguous(), d = decay.contiguous(), e = envelope.contiguous(),
                     z  = at::view_as_real(noise.contiguous());
    const int64_t items = a.size(0), channels = a.size(1), bins = a.size(2), frames = z.size(1),
                  rows = items * channels;
    at::Tensor mask    = at::empty({items, channels, frames, bins}, a.options());
    at::Tensor spectrum =
        at::empty({items, channels, frames, bins}, a.options().dtype(noise.scalar_type()));
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "masked_noise", [&] {
      write_log_masks(a.data_ptr<scalar_t>(), d.data_ptr<scalar_t>(), e.data_ptr<scalar_t>(),
                      mask.data_ptr<scalar_t>(), rows, frames, bins);
      mask.exp_();
      mask_noise(z.data_ptr<scalar_t>(), mask.data_ptr<scalar_t>(),
                 reinterpret_cast<scalar_t*>(spectrum.data_ptr()), rows, channels, frames, bins);
    });
    ctx->save_for_backward({initial, decay, envelope, noise, spectrum});
    return spectrum;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    if (c10::GradMode::is_enabled() || dsp::tangent_of(grads[0]).defined())
      return dsp::composed_backward(
          ctx, {saved[0], saved[1], saved[2]}, 4, grads[0],
          [&](const auto& in) { return masked_noise_composed(in[0], in[1], in[2], saved[3]); });
    const at::Tensor& spectrum = saved[4];
    const at::Tensor g         = grads[0].resolve_conj().contiguous();
    const int64_t items = spectrum.size(0), channels = spectrum.size(1), frames = spectrum.size(2),
                  bins    = spectrum.size(3);
    at::Tensor d_initial  = at::empty({items, channels, bins}, saved[0].options()),
               d_decay    = at::empty_like(d_initial),
               d_envelope = at::empty({items, channels, frames}, saved[0].options());
    AT_DISPATCH_FLOATING_TYPES(d_initial.scalar_type(), "masked_noise_backward", [&] {
      mask_gradients(reinterpret_cast<const scalar_t*>(spectrum.data_ptr()),
                     reinterpret_cast<const scalar_t*>(g.data_ptr()),
                     d_initial.data_ptr<scalar_t>(), d_decay.data_ptr<scalar_t>(),
                     d_envelope.data_ptr<scalar_t>(), items * channels, frames, bins);
    });
    return {d_initial, d_decay, d_envelope, at::Tensor()};
  }
};

/// masked_noise_composed, by MaskedNoise where it applies.
at::Tensor masked_noise(const at::Tensor& initial, const at::Tensor& decay,
                        const at::Tensor& envelope, const at::Tensor& noise) {
  return dsp::plain_on_cpu({initial, decay, envelope, noise})
             ? MaskedNoise::apply(initial, decay, envelope, noise)
             : masked_noise_composed(initial, decay, envelope, noise);
}

}  // namespace

std::vector<OptionSpec> NoiseReverb::option_specs() {
  return {units::impulse_layout_option("pseudo_midside",
                                       {"pseudo_midside", "midside", "stereo", "mono"}),
          OptionSpec::flag("gain_envelope", false,
                           "learn a level per STFT frame on top of the per-bin decays")};
}

NoiseReverb::NoiseReverb(const ProcessorConfig& config)
    : sample_rate_(config.sample_rate),
      length_(units::samples(kLengthSeconds, config, "reverb", "impulse response", kFftSize)),
      n_frames_(1 + length_ / kHop) {
  ProcessorOptions options = resolve_options(option_specs(), config.options);
  layout_                  = units::impulse_layout(options);
  gain_envelope_           = option_flag(options, "gain_envelope");
}

ProcessorDescriptor reverb_descriptor() {
  auto d                = ProcessorDescriptor::of<NoiseReverb>("reverb", 'r');
  d.summary             = "reverb: 2 s of mid/side noise shaped by an STFT mask, energy-normalised";
  d.grafx_name          = "STFTMaskedNoiseReverb";
  d.options             = NoiseReverb::option_specs();
  d.response            = ResponsePicture::kEnergyDecay;
  d.console_position    = 7;
  d.gain_staging        = true;  // grafx-prune regularises its reverbs' gain staging
  d.random_pruning_rate = 0.71;  // the paper's hybrid pruning at tolerance 0.01 (Table 2)
  d.musical_prior       = [](const PriorContext& c) {
    // A small room: darker above 1 kHz, decaying faster at high frequencies, a little wet.
    Random& r                  = c.random;
    constexpr int64_t kFftSize = NoiseReverb::kFftSize, n = kFftSize / 2 + 1;
    const int64_t channels = c.processor.parameter_specs()[0].shape[0];
    at::Tensor hz      = at::arange(n, at::kDouble) * (double(c.sample_rate) / double(kFftSize));
    at::Tensor darker  = -3.0 * at::log2(hz.clamp_min(1000.0) / 1000.0);
    double low         = r.uniform(0.6, 1.6);
    at::Tensor shorter = at::linspace(low, low * 0.4, n, at::kDouble);
    at::Tensor level   = at::stack({darker, darker - r.uniform(0, 6)});
    at::Tensor decay   = at::stack({shorter, shorter * r.uniform(0.8, 1.0)});
    return TensorDict{{"initial_level_db", level.narrow(0, 0, channels)},
                      {"decay_time_s", decay.narrow(0, 0, channels)},
                      {"wet", at::full({1}, r.uniform(0.1, 0.35), at::kDouble)}};
  };
  return d;
}

std::vector<ParameterSpec> NoiseReverb::parameter_specs() const {
  const double seconds_per_frame = double(kHop) / double(sample_rate_);
  // The mask falls by softplus(raw)/8 nepers per frame; 60 dB are 3·ln(10) nepers.
  const double decay_nepers = 3 * std::log(10.0) / kMaskExponent * seconds_per_frame;
  const int64_t n_bins      = kFftSize / 2 + 1;
  const int64_t channels    = dsp::n_impulse_responses(layout_);
  const std::string which   = channels == 1 ? "the noise" : "each noise (see the option channels)";
  std::vector<ParameterSpec> specs = {
      ParameterSpec::raw("init_log_magnitude", {channels, n_bins})
          .physical(
              "initial_level_db", "dB",
              [](const at::Tensor& raw) { return units::log_gain_to_db(raw * kMaskExponent); },
              [](const at::Tensor& db) { return units::db_to_log_gain(db) / kMaskExponent; })
          .about("level of " + which +
                 " per frequency bin at the start (relative: the impulse response is "
                 "energy-normalised)"),
      ParameterSpec::raw("delta_log_magnitude", {channels, n_bins})
          .physical(
              "decay_time_s", "s",
              [=](const at::Tensor& raw) { return decay_nepers / at::softplus(raw); },
              // softplus⁻¹(y) = y + log(1 − e^−y), stable for large y
              [=](const at::Tensor& seconds) {
                at::Tensor y = decay_nepers / seconds;
                return y + (-(-y).exp()).log1p();
              })
          .range(0.0, std::numeric_limits<double>::infinity())
          .about("time " + which + " takes to decay by 60 dB, per frequency bin")};
  if (gain_envelope_)
    specs.push_back(
        ParameterSpec::raw("gain_env_log_magnitude", {channels, n_frames_})
            .physical(
                "envelope_db", "dB",
                [](const at::Tensor& raw) { return units::log_gain_to_db(raw * kMaskExponent); },
                [](const at::Tensor& db) { return units::db_to_log_gain(db) / kMaskExponent; })
            .about("level of " + which + " per STFT frame (hop " + std::to_string(kHop) +
                   " samples), added to every bin"));
  return specs;
}

at::Tensor NoiseReverb::impulse_responses(const TensorDict& parameters,
                                          const at::TensorOptions& options) const {
  at::TensorOptions cpu_double = at::TensorOptions(at::kDouble);
  at::Tensor window            = constants_.get("window", options,
                                                [] { return at::hann_window(kFftSize, true, at::kDouble); });
  at::Tensor noise_stft        = constants_.get("noise_stft", options, [&] {
    at::Tensor noise = dsp::uniform_noise(2, length_, kNoiseSeed);
    at::Tensor hann  = at::hann_window(kFftSize, true, cpu_double);
    return at::view_as_real(  // C×frames×bins: frames first, as inverse_stft takes them
        at::stft(noise, kFftSize, kHop, kFftSize, hann, true, "reflect", false, true, true)
            .transpose(1, 2)
            .contiguous());
  });
  const at::Tensor& initial    = parameters.at("init_log_magnitude");  // N×C×193
  const at::Tensor decay       = at::softplus(parameters.at("delta_log_magnitude"));
  const at::Tensor envelope =
      gain_envelope_ ? parameters.at("gain_env_log_magnitude")
                     : at::zeros({initial.size(0), initial.size(1), n_frames_}, initial.options());
  // N×C×M×193; the first noise alone for mono.
  at::Tensor spectrum = masked_noise(initial, decay, envelope, at::view_as_complex(noise_stft));
  at::Tensor h        = dsp::inverse_stft(spectrum, window, kHop, length_);  // N×C×L
  return dsp::normalized_impulse_responses(h, layout_);
}

ProcessorOutput NoiseReverb::forward(const std::vector<at::Tensor>& inputs,
                                     const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor& x = inputs[0];
  return {{units::convolve_impulse_responses(x, impulse_responses(parameters, x.options()), layout_,
                                             name())},
          {}};
}

TemporalSupport NoiseReverb::temporal_support(const TensorDict&) const {
  return TemporalSupport::causal(length_ - 1);  // the impulse response's length
}

at::Tensor NoiseReverb::response_support(const TensorDict& raw) const {
  return until_decayed(impulse_responses(raw, at::kFloat));
}

}  // namespace grafx
