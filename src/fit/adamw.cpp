#include <grafx/error.h>
#include <grafx/fit/adamw.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>

namespace grafx {

AdamW::AdamW(Parameters parameters, AdamWOptions options)
    : parameters_(std::move(parameters)), options_(options) {
  reset();
}

void AdamW::reset() {
  n_steps_ = 0;
  exp_avg_.clear();
  exp_avg_sq_.clear();
  for (const auto& [type, named] : parameters_)
    for (const auto& [name, p] : named) {
      exp_avg_[type + "." + name]    = at::zeros_like(p).detach();
      exp_avg_sq_[type + "." + name] = at::zeros_like(p).detach();
    }
}

void AdamW::zero_grad() {
  for (auto& [type, named] : parameters_)
    for (auto& [name, p] : named)
      if (p.grad().defined()) p.mutable_grad() = at::Tensor();
}

void AdamW::step() { step({}); }

void AdamW::step(const Parameters& curvature) {
  c10::NoGradGuard no_grad;
  ++n_steps_;
  const double correction1 = 1 - std::pow(options_.beta1, double(n_steps_));
  const double correction2 = 1 - std::pow(options_.beta2, double(n_steps_));
  for (auto& [type, named] : parameters_)
    for (auto& [name, p] : named) {
      at::Tensor g = p.grad();
      if (!g.defined()) continue;
      const std::string key = type + "." + name;
      auto factor           = options_.lr_factors.find(key);
      const double lr = options_.lr * (factor == options_.lr_factors.end() ? 1.0 : factor->second);
      at::Tensor& m   = exp_avg_.at(key);
      at::Tensor& v   = exp_avg_sq_.at(key);
      if (options_.weight_decay != 0) p.mul_(1 - lr * options_.weight_decay);
      m.mul_(options_.beta1).add_(g, 1 - options_.beta1);
      const at::Tensor& c = curvature.empty() ? g : curvature.at(type).at(name);
      v.mul_(options_.beta2).addcmul_(c, c, 1 - options_.beta2);
      at::Tensor denominator = (v / correction2).sqrt_().add_(options_.eps);
      p.addcdiv_(m, denominator, -lr / correction1);
    }
  zero_grad();
}

TensorDict AdamW::state() const {
  TensorDict state;
  for (const auto& [key, m] : exp_avg_) state["exp_avg/" + key] = m;
  for (const auto& [key, v] : exp_avg_sq_) state["exp_avg_sq/" + key] = v;
  state["step"] = at::tensor(std::vector<int64_t>{n_steps_}, at::kLong);
  return state;
}

void AdamW::load_state(const TensorDict& state) {
  auto take = [&](const std::string& key, at::Tensor& into) {
    auto it = state.find(key);
    if (it == state.end())
      throw FitError("grafx.fit.checkpoint", "optimizer state lacks \"" + key + "\"");
    if (it->second.sizes() != into.sizes())
      throw FitError("grafx.fit.checkpoint",
                     "optimizer state \"" + key + "\" has another shape than its parameter");
    into.copy_(it->second);
  };
  for (auto& [key, m] : exp_avg_) take("exp_avg/" + key, m);
  for (auto& [key, v] : exp_avg_sq_) take("exp_avg_sq/" + key, v);
  auto step = state.find("step");
  if (step == state.end()) throw FitError("grafx.fit.checkpoint", "optimizer state lacks \"step\"");
  n_steps_ = step->second.item<int64_t>();
}

}  // namespace grafx
