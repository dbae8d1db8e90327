#include <grafx/dsp/forward_mode.h>
#include <grafx/dsp/parallel_fft.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <vector>

namespace grafx::dsp {

namespace {

/// at::fft_rfft (`inverse` false) or at::fft_irfft, split as the header says. An out= call
/// carries no tangent, hence the plain call for duals.
at::Tensor transform_rows(const at::Tensor& x, int64_t n, bool inverse) {
  auto plain = [&](const at::Tensor& rows) {
    return inverse ? at::fft_irfft(rows, n, -1) : at::fft_rfft(rows, n, -1);
  };
  const int64_t n_rows = x.numel() / std::max<int64_t>(1, x.size(-1));
  if (c10::GradMode::is_enabled() || !x.device().is_cpu() || at::get_num_threads() < 2 ||
      n_rows < 2 || at::in_parallel_region() || tangent_of(x).defined())
    return plain(x);
  const at::Tensor rows      = x.reshape({n_rows, x.size(-1)});
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back()               = inverse ? n : n / 2 + 1;
  at::Tensor out             = at::empty({n_rows, shape.back()},
                                         x.options().dtype(inverse ? c10::toRealValueType(x.scalar_type())
                                                                   : c10::toComplexType(x.scalar_type())));
  at::parallel_for(0, n_rows, 1, [&](int64_t begin, int64_t end) {
    c10::NoGradGuard no_grad;  // the grad mode is per thread, and workers start with their own
    at::Tensor part = out.narrow(0, begin, end - begin);
    if (inverse)
      at::fft_irfft_out(part, rows.narrow(0, begin, end - begin), n, -1);
    else
      at::fft_rfft_out(part, rows.narrow(0, begin, end - begin), n, -1);
  });
  return out.view(shape);
}

}  // namespace

at::Tensor rfft_rows(const at::Tensor& x, int64_t n) { return transform_rows(x, n, false); }
at::Tensor irfft_rows(const at::Tensor& x, int64_t n) { return transform_rows(x, n, true); }

}  // namespace grafx::dsp
