#include <grafx/dsp/signal.h>

#include <ATen/ATen.h>

#include <random>

namespace grafx::dsp {

at::Tensor to_mid_side(const at::Tensor& x) {
  at::Tensor left = x.narrow(1, 0, 1), right = x.narrow(1, 1, 1);
  return at::cat({left + right, left - right}, 1) * 0.5;
}

at::Tensor from_mid_side(const at::Tensor& x) {
  at::Tensor mid = x.narrow(1, 0, 1), side = x.narrow(1, 1, 1);
  return at::cat({mid + side, mid - side}, 1);
}

at::Tensor normalize_energy(const at::Tensor& h) {
  return h / (h.pow(2).sum(-1, true).mean(-2, true) + 1e-12).sqrt();
}

at::Tensor uniform_noise(int64_t n_channels, int64_t length, uint64_t seed) {
  std::mt19937_64 generator(seed);  // its sequence is fixed by the C++ standard
  at::Tensor noise = at::empty({n_channels, length}, at::kDouble);
  double* data     = noise.data_ptr<double>();
  for (int64_t i = 0; i < noise.numel(); ++i)
    data[i] = double(generator() >> 11) * 0x1.0p-52 - 1.0;  // 53 bits in [0, 2), minus 1
  return noise;
}

at::Tensor normalized_impulse_responses(const at::Tensor& h, ImpulseLayout layout) {
  return normalize_energy(layout == ImpulseLayout::kPseudoMidSide ? from_mid_side(h) : h);
}

}  // namespace grafx::dsp
