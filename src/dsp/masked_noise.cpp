// The noise reverb's kernel (grafx/dsp/masked_noise.h): the masked noise spectrum in ATen
// operations, and as one Function on the CPU with a hand-written backward pass.

#include <grafx/dsp/forward_mode.h>
#include <grafx/dsp/masked_noise.h>

#include "dsp/tangents.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <limits>

namespace grafx::dsp {
namespace {

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

}  // namespace

at::Tensor masked_noise(const at::Tensor& initial, const at::Tensor& decay,
                        const at::Tensor& envelope, const at::Tensor& noise) {
  return dsp::plain_on_cpu({initial, decay, envelope, noise})
             ? MaskedNoise::apply(initial, decay, envelope, noise)
             : masked_noise_composed(initial, decay, envelope, noise);
}

}  // namespace grafx::dsp
