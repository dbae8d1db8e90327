#include <grafx/dsp/forward_mode.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/forward_grad.h>

#include <atomic>
#include <mutex>

namespace grafx::dsp {
namespace {

// LibTorch supports one forward-mode level at a time; scopes share it.
std::mutex level_mutex;
std::atomic<int64_t> open_scopes{0};
uint64_t level = 0;

}  // namespace

ForwardMode::ForwardMode() {
  std::lock_guard<std::mutex> lock(level_mutex);
  if (open_scopes++ == 0) level = torch::autograd::ForwardADLevel::get_next_idx();
}

ForwardMode::~ForwardMode() {
  std::lock_guard<std::mutex> lock(level_mutex);
  if (--open_scopes == 0) torch::autograd::ForwardADLevel::release_idx(level);
}

bool forward_mode_active() { return open_scopes.load() > 0; }

at::Tensor make_dual(const at::Tensor& primal, const at::Tensor& tangent) {
  if (!tangent.defined()) return primal;
  TORCH_CHECK(forward_mode_active(), "make_dual: expected an open ForwardMode scope");
  TORCH_CHECK(tangent.sizes() == primal.sizes() && tangent.scalar_type() == primal.scalar_type(),
              "make_dual: expected a tangent of shape ", primal.sizes(), " and dtype ",
              primal.scalar_type(), ", but got ", tangent.sizes(), " ", tangent.scalar_type());
  return at::_make_dual(primal, tangent, int64_t(level));
}

std::pair<at::Tensor, at::Tensor> unpack_dual(const at::Tensor& t) {
  if (!t.defined() || !forward_mode_active()) return {t, at::Tensor()};
  at::Tensor tangent = t._fw_grad(level);
  if (!tangent.defined()) return {t, at::Tensor()};
  return {t._fw_primal(int64_t(level)), tangent};
}

at::Tensor tangent_of(const at::Tensor& t) { return unpack_dual(t).second; }

}  // namespace grafx::dsp
