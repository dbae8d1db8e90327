#include <grafx/dsp/forward_mode.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/forward_grad.h>

#include <atomic>
#include <mutex>

namespace grafx::dsp {
namespace {

// LibTorch supports one forward-mode level at a time, index 0 (nesting is refused). Scopes
// share it; a level someone else opened (e.g. Python's forward_ad.dual_level) serves too.
constexpr uint64_t kLevel = 0;
std::mutex level_mutex;
std::atomic<int64_t> open_scopes{0};
bool level_is_ours = false;

}  // namespace

ForwardMode::ForwardMode() {
  std::lock_guard<std::mutex> lock(level_mutex);
  if (open_scopes++ > 0) return;
  try {
    level_is_ours = torch::autograd::ForwardADLevel::get_next_idx() == kLevel;
  } catch (const c10::Error&) {  // already open elsewhere
    level_is_ours = false;
  }
}

ForwardMode::~ForwardMode() {
  std::lock_guard<std::mutex> lock(level_mutex);
  if (--open_scopes == 0 && level_is_ours) torch::autograd::ForwardADLevel::release_idx(kLevel);
}

at::Tensor make_dual(const at::Tensor& primal, const at::Tensor& tangent) {
  if (!tangent.defined()) return primal;
  TORCH_CHECK(tangent.sizes() == primal.sizes() && tangent.scalar_type() == primal.scalar_type(),
              "make_dual: expected a tangent of shape ", primal.sizes(), " and dtype ",
              primal.scalar_type(), ", but got ", tangent.sizes(), " ", tangent.scalar_type());
  return at::_make_dual(primal, tangent, int64_t(kLevel));  // LibTorch refuses it with no level
}

std::pair<at::Tensor, at::Tensor> unpack_dual(const at::Tensor& t) {
  if (!t.defined()) return {t, at::Tensor()};
  const at::Tensor& tangent = t._fw_grad(kLevel);
  if (!tangent.defined()) return {t, at::Tensor()};
  return {t._fw_primal(int64_t(kLevel)), tangent};
}

at::Tensor tangent_of(const at::Tensor& t) { return unpack_dual(t).second; }

}  // namespace grafx::dsp
