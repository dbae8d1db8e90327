#include <grafx/dsp/forward_mode.h>
#include <grafx/dsp/parallel_fft.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <atomic>
#include <mutex>
#include <vector>

namespace grafx::dsp {

struct FftLedger::State {
  std::mutex mutex;
  std::vector<FftRecord> records;
};

namespace {

std::atomic<FftLedger::State*> active_ledger{nullptr};

void record(int64_t size, int64_t rows, bool inverse) {
  FftLedger::State* ledger = active_ledger.load(std::memory_order_acquire);
  if (!ledger) return;
  std::lock_guard<std::mutex> lock(ledger->mutex);
  ledger->records.push_back({size, rows, inverse});
}

/// at::fft_rfft (`inverse` false) or at::fft_irfft, split as the header says. An out= call
/// carries no tangent, hence the plain call for duals.
at::Tensor transform_rows(const at::Tensor& x, int64_t n, bool inverse) {
  auto plain = [&](const at::Tensor& rows) {
    return inverse ? at::fft_irfft(rows, n, -1) : at::fft_rfft(rows, n, -1);
  };
  const int64_t n_rows = x.numel() / std::max<int64_t>(1, x.size(-1));
  record(n, n_rows, inverse);
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

/// The last dimension of t cut or zero-padded to `size`.
at::Tensor resized(const at::Tensor& t, int64_t size) {
  const int64_t have = t.size(-1);
  return have >= size ? t.narrow(-1, 0, size) : at::constant_pad_nd(t, {0, size - have});
}

/// rfft of n samples: for y = rfft(x), ∂loss/∂x = n · irfft(h), h the gradient with every bin
/// but DC and Nyquist halved (they stand for two bins of the full spectrum, and irfft counts
/// them twice).
struct RealFft : public torch::autograd::Function<RealFft> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, int64_t n) {
    ctx->saved_data["sizes"] = std::vector<int64_t>{n, x.size(-1)};
    return rfft_rows(x, n);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto sizes = ctx->saved_data["sizes"].toIntVector();
    const int64_t n = sizes[0], n_bins = grads[0].size(-1);
    at::Tensor h = grads[0] * 0.5;
    h.narrow(-1, 0, 1).mul_(2);
    if (n % 2 == 0) h.narrow(-1, n_bins - 1, 1).mul_(2);
    return {resized(irfft_rows(h, n) * double(n), sizes[1]), at::Tensor()};
  }
};

/// irfft to n samples: for y = irfft(X), ∂loss/∂X = (2/n) · rfft(g), DC and Nyquist (bins that
/// appear once in the full spectrum) 1/n; its real part for a real X.
struct InverseRealFft : public torch::autograd::Function<InverseRealFft> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& spectrum,
                            int64_t n) {
    ctx->saved_data["sizes"] = std::vector<int64_t>{n, spectrum.size(-1)};
    ctx->saved_data["real"]  = !spectrum.is_complex();  // a real spectrum (zero phase) is allowed
    return irfft_rows(spectrum, n);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto sizes = ctx->saved_data["sizes"].toIntVector();
    const int64_t n  = sizes[0];
    at::Tensor g     = rfft_rows(grads[0], n) * (2.0 / double(n));
    g.narrow(-1, 0, 1).mul_(0.5);
    if (n % 2 == 0) g.narrow(-1, n / 2, 1).mul_(0.5);
    g = resized(g, sizes[1]);
    return {ctx->saved_data["real"].toBool() ? at::real(g).contiguous() : g, at::Tensor()};
  }
};

}  // namespace

at::Tensor rfft(const at::Tensor& x, int64_t n) {
  if (tangent_of(x).defined()) return at::fft_rfft(x, n, -1);
  return RealFft::apply(x, n);
}

at::Tensor irfft(const at::Tensor& x, int64_t n) {
  if (tangent_of(x).defined()) return at::fft_irfft(x, n, -1);
  return InverseRealFft::apply(x, n);
}

FftLedger::FftLedger() : state_(std::make_shared<State>()) {
  State* expected = nullptr;
  TORCH_CHECK(active_ledger.compare_exchange_strong(expected, state_.get()),
              "FftLedger: another ledger is recording");
}
FftLedger::~FftLedger() { active_ledger.store(nullptr, std::memory_order_release); }

std::vector<FftRecord> FftLedger::records() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->records;
}

at::Tensor rfft_rows(const at::Tensor& x, int64_t n) { return transform_rows(x, n, false); }
at::Tensor irfft_rows(const at::Tensor& x, int64_t n) { return transform_rows(x, n, true); }

}  // namespace grafx::dsp
