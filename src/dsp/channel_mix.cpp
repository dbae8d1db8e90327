#include <grafx/dsp/channel_mix.h>
#include <grafx/dsp/forward_mode.h>

#include "dsp/rows.h"
#include "dsp/tangents.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <vector>

namespace grafx::dsp {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// The product in ATen operations (differentiable by autograd and forward mode, any device).
at::Tensor mix_with_aten(const at::Tensor& x, const at::Tensor& matrix) {
  at::Tensor stereo = x.expand({x.size(0), 2, x.size(2)});
  return (matrix.unsqueeze(-1) * stereo.unsqueeze(1)).sum(2);
}

struct ChannelMix : public torch::autograd::Function<ChannelMix> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& matrix) {
    const at::Tensor xc = x.contiguous(), mc = matrix.contiguous();
    const int64_t items = x.size(0), channels = x.size(1), length = x.size(2);
    at::Tensor y = at::empty({items, 2, length}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "mix_channels", [&] {
      const scalar_t* xp = xc.data_ptr<scalar_t>();
      const scalar_t* mp = mc.data_ptr<scalar_t>();
      scalar_t* yp       = y.data_ptr<scalar_t>();
      for_sample_blocks(items, length, [&](int64_t, int64_t n, int64_t first, int64_t end) {
        const scalar_t* m = mp + 4 * n;
        const scalar_t* l = xp + n * channels * length;
        const scalar_t* r = channels == 2 ? l + length : l;
        scalar_t* yl      = yp + n * 2 * length;
        scalar_t* yr      = yl + length;
        const scalar_t a = m[0], b = m[1], c = m[2], d = m[3];
        for (int64_t t = first; t < end; ++t) {
          const scalar_t left = l[t], right = r[t];
          yl[t] = a * left + b * right;
          yr[t] = c * left + d * right;
        }
      });
    });
    ctx->save_for_backward({x, matrix});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved    = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &matrix = saved[1];
    // A recorded backward pass (differentiable again), or one carrying tangents: ATen operations.
    if (c10::GradMode::is_enabled() || tangent_of(grads[0]).defined()) {
      at::Tensor grad_stereo = mix_with_aten(grads[0], matrix.transpose(1, 2));
      at::Tensor grad_x      = x.size(1) == 2 ? grad_stereo : grad_stereo.sum(1, true);
      at::Tensor grad_matrix =
          (grads[0].unsqueeze(2) * x.expand({x.size(0), 2, x.size(2)}).unsqueeze(1)).sum(-1);
      return {grad_x, grad_matrix};
    }
    const at::Tensor g = grads[0].contiguous(), xc = x.contiguous(), mc = matrix.contiguous();
    const int64_t items = x.size(0), channels = x.size(1), length = x.size(2);
    const int64_t tasks = sample_block_tasks(items, length);
    at::Tensor grad_x   = at::empty_like(xc);
    std::vector<double> partial(size_t(tasks) * 4, 0.0);  // Σ g_i·x_j of each task
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "mix_channels_backward", [&] {
      const scalar_t* gp = g.data_ptr<scalar_t>();
      const scalar_t* xp = xc.data_ptr<scalar_t>();
      const scalar_t* mp = mc.data_ptr<scalar_t>();
      scalar_t* dp       = grad_x.data_ptr<scalar_t>();
      for_sample_blocks(items, length, [&](int64_t task, int64_t n, int64_t first, int64_t end) {
        const scalar_t* m  = mp + 4 * n;
        const scalar_t* gl = gp + n * 2 * length;
        const scalar_t* gr = gl + length;
        const scalar_t* l  = xp + n * channels * length;
        const scalar_t* r  = channels == 2 ? l + length : l;
        scalar_t* dl       = dp + n * channels * length;
        scalar_t* dr       = dl + length;
        const scalar_t a = m[0], b = m[1], c = m[2], d = m[3];
        scalar_t ll = 0, lr = 0, rl = 0, rr = 0;
        for (int64_t t = first; t < end; ++t) {
          const scalar_t left = gl[t], right = gr[t];
          if (channels == 2) {
            dl[t] = a * left + c * right;
            dr[t] = b * left + d * right;
          } else {
            dl[t] = (a + b) * left + (c + d) * right;
          }
          ll += left * l[t];
          lr += left * r[t];
          rl += right * l[t];
          rr += right * r[t];
        }
        double* sums = partial.data() + 4 * task;
        sums[0] = ll, sums[1] = lr, sums[2] = rl, sums[3] = rr;
      });
    });
    // Sums of the tasks of each item, in task order (the same result on every thread count).
    at::Tensor grad_matrix =
        at::from_blob(partial.data(), {items, tasks / items, 2, 2}, at::kDouble)
            .sum(1)
            .to(matrix.scalar_type());
    return {grad_x, grad_matrix};
  }
};

}  // namespace

at::Tensor mix_channels(const at::Tensor& x, const at::Tensor& matrix) {
  TORCH_CHECK(
      x.dim() == 3 && (x.size(1) == 1 || x.size(1) == 2) && at::isFloatingType(x.scalar_type()),
      "mix_channels: expected float or double signals N×1×L or N×2×L, but got ", x.sizes(), " ",
      x.scalar_type());
  TORCH_CHECK(matrix.dim() == 3 && matrix.size(0) == x.size(0) && matrix.size(1) == 2 &&
                  matrix.size(2) == 2 && matrix.scalar_type() == x.scalar_type(),
              "mix_channels: expected matrices ", x.size(0), "×2×2 of ", x.scalar_type(),
              ", but got ", matrix.sizes(), " ", matrix.scalar_type());
  return plain_on_cpu({x, matrix}) ? ChannelMix::apply(x, matrix) : mix_with_aten(x, matrix);
}

at::Tensor with_dry(const at::Tensor& matrix, const at::Tensor& wet) {
  return at::lerp(at::eye(2, matrix.options()).expand_as(matrix), matrix, wet);
}

}  // namespace grafx::dsp
