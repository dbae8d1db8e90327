#include <grafx/error.h>
#include <grafx/fit/adamw.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>

namespace grafx {
namespace {
constexpr int64_t kAlignment = 16;  // elements: 64 bytes of float32
}  // namespace

AdamW::AdamW(Parameters parameters, AdamWOptions options) : options_(std::move(options)) {
  c10::NoGradGuard no_grad;
  at::TensorOptions flat_options;
  int64_t total = 0;
  for (const auto& [type, values] : parameters)
    for (const auto& [name, p] : values.named()) {
      if (slots_.empty()) flat_options = p.options().requires_grad(false);
      if (p.scalar_type() != flat_options.dtype().toScalarType() ||
          p.device() != flat_options.device())
        throw FitError("grafx.fit.options",
                       "AdamW takes parameters of one dtype on one device, but " + type + "." +
                           name + " differs from the first");
      // Each slice starts on a 64-byte boundary, as a tensor of its own would: kernels that
      // read two floats as a complex number, or vectors of them, need it.
      total = (total + kAlignment - 1) / kAlignment * kAlignment;
      slots_.push_back({type + "." + name, p, total, p.numel()});
      total += p.numel();
    }
  values_  = at::zeros({total}, flat_options);
  padding_ = at::zeros({kAlignment}, flat_options);  // the gaps' gradients
  std::vector<double> factors(size_t(total), 1.0);
  bool scaled = false;
  for (Slot& slot : slots_) {
    at::Tensor piece = values_.narrow(0, slot.offset, slot.numel);
    piece.copy_(slot.parameter.detach().reshape({-1}));
    // The caller's tensor becomes a view of its slice: the same parameter, updated in place.
    slot.parameter.set_data(piece.view(slot.parameter.sizes()));
    auto factor    = options_.lr_factors.find(slot.key);
    const double f = factor == options_.lr_factors.end() ? 1.0 : factor->second;
    scaled         = scaled || f != 1.0;
    std::fill_n(factors.begin() + slot.offset, slot.numel, f);
  }
  if (scaled) lr_factors_ = at::tensor(factors, at::kDouble).to(flat_options);
  scalars_ = at::zeros({3}, flat_options);
  reset();
}

void AdamW::reset() {
  n_steps_ = 0;
  if (!exp_avg_.defined()) {
    exp_avg_    = at::zeros_like(values_);
    exp_avg_sq_ = at::zeros_like(values_);
  }
  exp_avg_.zero_();  // in place: a captured step reads these buffers
  exp_avg_sq_.zero_();
}

void AdamW::zero_grad() {
  for (Slot& slot : slots_)
    if (slot.parameter.grad().defined()) slot.parameter.mutable_grad() = at::Tensor();
}

void AdamW::step() { step({}); }

void AdamW::step(const Parameters& curvature) {
  prepare();
  update(0, {}, curvature);
  count_step();
}

void AdamW::prepare() {
  const double t = double(n_steps_ + 1);
  // Three fills: kernels with the values as arguments (a copy from the host would wait for the
  // device on CUDA).
  scalars_.select(0, 0).fill_(options_.lr);
  scalars_.select(0, 1).fill_(1 - std::pow(options_.beta1, t));
  scalars_.select(0, 2).fill_(1 - std::pow(options_.beta2, t));
}

std::pair<at::Tensor, at::Tensor> AdamW::gathered(const Parameters& curvature,
                                                  at::Tensor* flat_curvature) {
  std::vector<at::Tensor> gradients, curvatures;
  std::vector<bool> present;
  int64_t end = 0;  // of the pieces so far
  for (const Slot& slot : slots_) {
    const at::Tensor& g = slot.parameter.grad();
    present.push_back(g.defined());
    if (slot.offset > end) {  // the gap before an aligned slice
      gradients.push_back(padding_.narrow(0, 0, slot.offset - end));
      curvatures.push_back(gradients.back());
    }
    gradients.push_back(g.defined() ? g.reshape({-1}) : at::zeros({slot.numel}, values_.options()));
    if (!curvature.empty()) {
      const auto dot   = slot.key.find('.');
      const auto& type = curvature.at(slot.key.substr(0, dot));
      curvatures.push_back(type.at(slot.key.substr(dot + 1)).reshape({-1}));
    }
    end = slot.offset + slot.numel;
  }
  if (flat_curvature && !curvature.empty()) *flat_curvature = at::cat(curvatures);
  at::Tensor& mask = masks_[present];
  if (!mask.defined()) {  // made once per pattern, so a captured step copies nothing to the device
    std::vector<uint8_t> elements(size_t(values_.numel()), 0);
    for (size_t s = 0; s < slots_.size(); ++s)
      std::fill_n(elements.begin() + slots_[s].offset, slots_[s].numel, present[s] ? 1 : 0);
    mask = at::tensor(elements, at::kByte).to(values_.device()).to(at::kBool);
  }
  return {gradients.empty() ? values_.new_zeros({0}) : at::cat(gradients), mask};
}

AdamW::Update AdamW::update(double max_gradient_norm, const at::Tensor& loss,
                            const Parameters& curvature) {
  c10::NoGradGuard no_grad;
  at::Tensor flat_curvature;
  auto [g, mask] = gathered(curvature, &flat_curvature);
  zero_grad();
  Update result;
  result.gradient_norm = g.to(at::kDouble).square().sum().sqrt();
  if (max_gradient_norm > 0)  // as clip_grad_norm_: only norms above the limit are scaled
    g = g * at::where(result.gradient_norm > max_gradient_norm,
                      max_gradient_norm / result.gradient_norm, at::ones_like(result.gradient_norm))
                .to(g.scalar_type());
  result.applied = result.gradient_norm.isfinite();
  if (loss.defined()) result.applied = result.applied.logical_and(loss.isfinite());
  const at::Tensor lr = scalars_.select(0, 0), correction1 = scalars_.select(0, 1),
                   correction2 = scalars_.select(0, 2);
  const at::Tensor step_lr     = lr_factors_.defined() ? lr * lr_factors_ : lr;
  const at::Tensor& c          = flat_curvature.defined() ? flat_curvature : g;
  const at::Tensor m           = exp_avg_ * options_.beta1 + g * (1 - options_.beta1);
  const at::Tensor v           = exp_avg_sq_ * options_.beta2 + c * c * (1 - options_.beta2);
  at::Tensor moved =
      options_.weight_decay != 0 ? values_ * (1 - step_lr * options_.weight_decay) : values_;
  moved = moved - (step_lr / correction1) * m / ((v / correction2).sqrt() + options_.eps);
  // An update that overflows (a huge weight decay, say) is not made either.
  result.applied           = result.applied.logical_and(moved.isfinite().all());
  const at::Tensor changed = mask.logical_and(result.applied);
  values_.copy_(at::where(changed, moved, values_));
  exp_avg_.copy_(at::where(changed, m, exp_avg_));
  exp_avg_sq_.copy_(at::where(changed, v, exp_avg_sq_));
  return result;
}

TensorDict AdamW::state() const {
  TensorDict state;
  for (const Slot& slot : slots_) {
    const auto shape                = slot.parameter.sizes();
    state["exp_avg/" + slot.key]    = exp_avg_.narrow(0, slot.offset, slot.numel).view(shape);
    state["exp_avg_sq/" + slot.key] = exp_avg_sq_.narrow(0, slot.offset, slot.numel).view(shape);
  }
  state["step"] = at::tensor(std::vector<int64_t>{n_steps_}, at::kLong);
  return state;
}

void AdamW::load_state(const TensorDict& state) {
  c10::NoGradGuard no_grad;
  auto take = [&](const std::string& key, const Slot& slot, const at::Tensor& flat) {
    auto it = state.find(key);
    if (it == state.end())
      throw FitError("grafx.fit.checkpoint", "optimizer state lacks \"" + key + "\"");
    if (it->second.sizes() != slot.parameter.sizes())
      throw FitError("grafx.fit.checkpoint",
                     "optimizer state \"" + key + "\" has another shape than its parameter");
    flat.narrow(0, slot.offset, slot.numel).copy_(it->second.reshape({-1}));
  };
  auto step = state.find("step");
  if (step == state.end()) throw FitError("grafx.fit.checkpoint", "optimizer state lacks \"step\"");
  for (const Slot& slot : slots_) {
    take("exp_avg/" + slot.key, slot, exp_avg_);
    take("exp_avg_sq/" + slot.key, slot, exp_avg_sq_);
  }
  n_steps_ = step->second.item<int64_t>();
}

}  // namespace grafx
