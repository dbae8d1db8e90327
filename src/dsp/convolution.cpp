#include <grafx/dsp/convolution.h>
#include <grafx/dsp/parallel_fft.h>
#include <grafx/dsp/signal.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include "dsp/rows.h"
#include "dsp/tangents.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace grafx::dsp {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The cost model: n·log2(n) per transform of fast size n (bench/dsp_bench.cpp checks its
// choices against measured times; docs/benchmarks.md).
double transform_cost(int64_t n) { return double(n) * std::log2(double(n)); }

/// Index of the full convolution that becomes output sample 0.
int64_t output_shift(int64_t filter_length, ConvolutionMode mode) {
  return mode == ConvolutionMode::kZeroPhase ? filter_length / 2 : 0;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Overlap-save: the outputs [shift, shift + n_outputs) of the full convolution come in blocks
/// of `hop` samples; block b is the circular convolution of fft_size input samples (hop new
/// ones and K − 1 of history) with the filter, whose first K − 1 samples wrap around and are
/// dropped. One block of at least n_outputs + K − 1 samples is a whole-signal FFT convolution.
struct Blocks {
  int64_t length, taps, shift, n_outputs, fft_size, hop, n_blocks, left, padded_length;

  Blocks(int64_t length, int64_t taps, int64_t shift, int64_t n_outputs, int64_t fft_size)
      : length(length),
        taps(taps),
        shift(shift),
        n_outputs(n_outputs),
        fft_size(fft_size),
        hop(fft_size - taps + 1),
        n_blocks(ceil_div(n_outputs, hop)),
        left(taps - 1 - shift),
        padded_length(n_blocks * hop + taps - 1) {}

  /// rfft of every block of x: N×C×B×F.
  at::Tensor block_spectra(const at::Tensor& x) const {
    at::Tensor padded = zero_padded(x, left, padded_length - left - length);
    return rfft_rows(padded.unfold(-1, fft_size, hop), fft_size);
  }
  at::Tensor filter_spectrum(const at::Tensor& h) const {
    return rfft_rows(zero_padded(h, 0, fft_size - h.size(-1)), fft_size).unsqueeze(-2);
  }

  /// The valid part of each block's circular convolution, in order: N×C×n_outputs.
  at::Tensor outputs(const at::Tensor& circular) const {
    at::Tensor valid = circular.narrow(-1, taps - 1, hop);
    return valid.reshape({valid.size(0), valid.size(1), n_blocks * hop}).narrow(-1, 0, n_outputs);
  }
  /// The adjoint of `outputs`: a gradient of the outputs placed at the valid part of each block.
  at::Tensor blocks_of(const at::Tensor& grad) const {
    if (n_blocks == 1)  // the whole signal: one pad
      return zero_padded(grad, taps - 1, hop - n_outputs).unsqueeze(2);
    at::Tensor padded = zero_padded(grad, 0, n_blocks * hop - n_outputs);
    return zero_padded(padded.view({grad.size(0), grad.size(1), n_blocks, hop}), taps - 1, 0);
  }
  /// The adjoint of `block_spectra`'s blocks: overlap-add, then the samples of x.
  at::Tensor overlap_add(const at::Tensor& block_grads) const {
    // One block is the whole padded signal: nothing overlaps (and nothing to zero and add).
    if (n_blocks == 1) return block_grads.squeeze(2).narrow(-1, left, length);
    const int64_t items = block_grads.size(0), channels = block_grads.size(1);
    return dsp::overlap_add(block_grads.reshape({items * channels, n_blocks, fft_size}),
                            padded_length, hop)
        .view({items, channels, padded_length})
        .narrow(-1, left, length);
  }
};

/// o += x·conj(y) (kAdd), or o = x·conj(y), over `bins` complex values (interleaved
/// real and imaginary parts).
template <typename T, bool kAdd>
void conjugate_product_into(const T* x, const T* y, T* o, int64_t bins) {
#pragma omp simd
  for (int64_t f = 0; f < bins; ++f) {
    const T re   = x[2 * f] * y[2 * f] + x[2 * f + 1] * y[2 * f + 1],
            im   = x[2 * f + 1] * y[2 * f] - x[2 * f] * y[2 * f + 1];
    o[2 * f]     = kAdd ? o[2 * f] + re : re;
    o[2 * f + 1] = kAdd ? o[2 * f + 1] + im : im;
  }
}

/// o = x·conj(y) where o is met first, o += x·conj(y) after.
template <typename T>
void conjugate_product(const T* x, const T* y, T* o, int64_t bins, bool first) {
  if (first)
    conjugate_product_into<T, false>(x, y, o, bins);
  else
    conjugate_product_into<T, true>(x, y, o, bins);
}

/// Calls product(a row, the b row it meets, the output row, first) for spectra a (N×C×B×F) and
/// b (N×Cb×Bb×F, Cb 1 or C, Bb 1 or B) and an output of N×Co×Bo×F (Co 1 or C, Bo 1 or B), all
/// complex and contiguous, row by row in order: b and the output repeat over the channels and
/// blocks where they have one; `first` says the output row is met for the first time.
template <typename T, typename Product>
void for_spectra_rows(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out,
                      const Product& product) {
  const int64_t items = a.size(0), channels = a.size(1), blocks = a.size(2), bins = a.size(3);
  const T *ap = reinterpret_cast<const T*>(a.data_ptr()),
          *bp = reinterpret_cast<const T*>(b.data_ptr());
  T* op       = reinterpret_cast<T*>(out.data_ptr());
  auto row    = [&](const at::Tensor& t, int64_t i, int64_t c, int64_t k) {
    const int64_t tc = t.size(1) == 1 ? 0 : c, tk = t.size(2) == 1 ? 0 : k;
    return ((i * t.size(1) + tc) * t.size(2) + tk) * 2 * bins;
  };
  for (int64_t i = 0; i < items; ++i)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t k = 0; k < blocks; ++k)
        product(ap + row(a, i, c, k), bp + row(b, i, c, k), op + row(out, i, c, k), bins,
                (out.size(1) > 1 || c == 0) && (out.size(2) > 1 || k == 0));
}

/// a·conj(h) for spectra a (N×C×B×F) and a filter's h (N×Ch×1×F, Ch 1 or C), complex and
/// contiguous: in one pass, where ATen's product first copies conj(h).
at::Tensor times_conjugate(const at::Tensor& a, const at::Tensor& h) {
  at::Tensor out = at::empty_like(a);
  AT_DISPATCH_FLOATING_TYPES(c10::toRealValueType(a.scalar_type()), "times_conjugate", [&] {
    for_spectra_rows<scalar_t>(a, h, out, conjugate_product<scalar_t>);
  });
  return out;
}

/// Σ a·conj(b) over the blocks and, for out_channels 1, the channels, of spectra a and b
/// (N×C×B×F, complex, contiguous): N×out_channels×1×F, in one pass, where ATen's product copies
/// conj(b) and reduces in two more passes.
at::Tensor summed_cross_spectra(const at::Tensor& a, const at::Tensor& b, int64_t out_channels) {
  at::Tensor out = at::empty({a.size(0), out_channels, 1, a.size(3)}, a.options());
  AT_DISPATCH_FLOATING_TYPES(c10::toRealValueType(a.scalar_type()), "summed_cross_spectra", [&] {
    for_spectra_rows<scalar_t>(a, b, out, conjugate_product<scalar_t>);
  });
  return out;
}

/// The items in turn where each has filters of its own (the EQs' FIRs, the delays' and reverbs'
/// responses), on the CPU: groups of whole items, each at least kRows transform rows, go through
/// their transforms, products and cuts on one thread while the groups share the threads. A
/// group's spectra stay in cache between its steps, and no transform's result is copied into a
/// shared tensor (ATen's out= FFT copies its result). Groups are fixed by item index, so results
/// do not depend on the number of threads.
class ItemGroups {
 public:
  // pocketfft transforms float rows in vectors of four: fewer per call leaves lanes idle.
  static constexpr int64_t kRows = 4;

  ItemGroups(const Blocks& blocks, const at::Tensor& x, const at::Tensor& h)
      : blocks_(blocks),
        x_(x),
        h_(h),
        items_per_group_(ceil_div(kRows, x.size(1) * blocks.n_blocks)) {}

  /// On the CPU, filters per item, and more than one group.
  bool apply() const {
    return x_.device().is_cpu() && h_.size(0) == x_.size(0) && x_.size(0) > items_per_group_;
  }

  /// Writes the convolution into y (N×C×n_outputs); returns the spectra of x and h per group.
  std::pair<c10::List<at::Tensor>, c10::List<at::Tensor>> forward(const at::Tensor& y) const {
    const size_t n_groups = size_t(ceil_div(x_.size(0), items_per_group_));
    std::vector<at::Tensor> x_spectra(n_groups), h_spectra(n_groups);
    for_groups(x_.size(0), items_per_group_, [&](int64_t g, int64_t first, int64_t n) {
      x_spectra[g] = blocks_.block_spectra(x_.narrow(0, first, n));
      h_spectra[g] = blocks_.filter_spectrum(h_.narrow(0, first, n));
      y.narrow(0, first, n)
          .copy_(blocks_.outputs(irfft_rows(x_spectra[g] * h_spectra[g], blocks_.fft_size)));
    });
    return {c10::List<at::Tensor>(x_spectra), c10::List<at::Tensor>(h_spectra)};
  }

  /// Writes the gradients of x and h (either undefined when not needed) for the output
  /// gradient `grad`, from the spectra `forward` returned.
  void backward(const at::Tensor& grad, const c10::List<at::Tensor>& x_spectra,
                const c10::List<at::Tensor>& h_spectra, const at::Tensor& grad_x,
                const at::Tensor& grad_h) const {
    const int64_t size = blocks_.fft_size;
    for_groups(x_.size(0), items_per_group_, [&](int64_t g, int64_t first, int64_t n) {
      const at::Tensor spectra =
          rfft_rows(blocks_.blocks_of(grad.narrow(0, first, n)), size).contiguous();
      const at::Tensor h = h_spectra.get(g).contiguous();
      if (grad_x.defined())
        grad_x.narrow(0, first, n)
            .copy_(blocks_.overlap_add(irfft_rows(times_conjugate(spectra, h), size)));
      if (grad_h.defined()) {
        const at::Tensor cross =
            summed_cross_spectra(spectra, x_spectra.get(g).contiguous(), h.size(1)).squeeze(2);
        grad_h.narrow(0, first, n).copy_(irfft_rows(cross, size).narrow(-1, 0, blocks_.taps));
      }
    });
  }

 private:
  const Blocks& blocks_;
  at::Tensor x_, h_;
  int64_t items_per_group_;
};

/// Overlap-save convolution with a hand-written adjoint: the gradients are correlations with
/// the saved spectra (one rfft of the output gradient, one irfft per gradient), a third of the
/// transforms autograd would spend differentiating rfft and irfft.
struct OverlapSave : public torch::autograd::Function<OverlapSave> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& h,
                            int64_t shift, int64_t n_outputs, int64_t fft_size,
                            const SavedDuals& duals) {
    Blocks blocks(x.size(2), h.size(2), shift, n_outputs, fft_size);
    ctx->save_for_backward({x, h});
    duals.save(ctx);
    ctx->saved_data["geometry"] = std::vector<int64_t>{shift, n_outputs, fft_size};
    if (ItemGroups groups(blocks, x, h); groups.apply()) {
      at::Tensor y                 = at::empty({x.size(0), x.size(1), n_outputs}, x.options());
      auto [x_spectra, h_spectra]  = groups.forward(y);
      ctx->saved_data["x_spectra"] = x_spectra;
      ctx->saved_data["h_spectra"] = h_spectra;
      return y;
    }
    at::Tensor x_spectra = blocks.block_spectra(x), h_spectrum = blocks.filter_spectrum(h);
    ctx->saved_data["x_spectra"]  = x_spectra;
    ctx->saved_data["h_spectrum"] = h_spectrum;
    return blocks.outputs(irfft_rows(x_spectra * h_spectrum, fft_size));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved   = ctx->get_saved_variables();
    auto duals   = SavedDuals::of(ctx);
    at::Tensor x = duals.empty() ? saved[0] : duals[0], h = duals.empty() ? saved[1] : duals[1];
    auto geometry = ctx->saved_data["geometry"].toIntVector();
    Blocks blocks(x.size(2), h.size(2), geometry[0], geometry[1], geometry[2]);
    // With create_graph, or tangents to carry (of x and h, or of the output gradient), the
    // spectra are recomputed from x and h in ATen operations so that the gradients are
    // differentiable again and carry the tangents; otherwise the forward's are reused.
    bool again = c10::GradMode::is_enabled() || !duals.empty() || tangent_of(grads[0]).defined();
    if (!again && ctx->saved_data.count("h_spectra")) {
      at::Tensor grad_x = ctx->needs_input_grad(0) ? at::empty_like(x) : at::Tensor();
      at::Tensor grad_h = ctx->needs_input_grad(1) ? at::empty_like(h) : at::Tensor();
      ItemGroups(blocks, x, h)
          .backward(grads[0], ctx->saved_data["x_spectra"].toTensorList(),
                    ctx->saved_data["h_spectra"].toTensorList(), grad_x, grad_h);
      return {grad_x, grad_h, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
    at::Tensor x_spectra =
        again ? blocks.block_spectra(x) : ctx->saved_data["x_spectra"].toTensor();
    at::Tensor h_spectrum =
        again ? blocks.filter_spectrum(h) : ctx->saved_data["h_spectrum"].toTensor();
    at::Tensor grad_spectra = rfft_rows(blocks.blocks_of(grads[0]), blocks.fft_size);
    at::Tensor grad_x, grad_h;
    if (ctx->needs_input_grad(0))
      grad_x = blocks.overlap_add(irfft_rows(grad_spectra * h_spectrum.conj(), blocks.fft_size));
    if (ctx->needs_input_grad(1)) {
      at::Tensor cross =
          (grad_spectra * x_spectra.conj()).sum(-2).sum_to_size(h_spectrum.squeeze(-2).sizes());
      grad_h = irfft_rows(cross, blocks.fft_size).narrow(-1, 0, blocks.taps);
    }
    return {grad_x, grad_h, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

/// The size of one block holding the whole signal.
int64_t whole_signal_fft_size(int64_t signal_length, int64_t filter_length, ConvolutionMode mode) {
  return fast_fft_size(output_length(signal_length, filter_length, mode) + filter_length - 1);
}

/// The cheapest overlap-save plan with blocks from 2K up to (not including) `max_size`; its
/// cost is infinite when there is no such block size.
ConvolutionPlan best_block_plan(int64_t n_outputs, int64_t filter_length, int64_t max_size) {
  ConvolutionPlan best{true, 0, 0, std::numeric_limits<double>::infinity()};
  for (int64_t size = fast_fft_size(2 * filter_length); size < max_size;
       size         = fast_fft_size(size + 1)) {
    int64_t n_blocks = ceil_div(n_outputs, size - filter_length + 1);
    double cost =
        double(2 * n_blocks + 1) * transform_cost(size);  // rfft + irfft per block, filter
    if (cost < best.cost) best = {true, size, n_blocks, cost};
  }
  return best;
}

void check_arguments(const at::Tensor& x, const at::Tensor& h, const char* where) {
  TORCH_CHECK(x.dim() == 3 && h.dim() == 3, where, ": expected x N×C×L and h N×C×K, but got x ",
              x.sizes(), " and h ", h.sizes());
  TORCH_CHECK(x.scalar_type() == h.scalar_type() && at::isFloatingType(x.scalar_type()), where,
              ": expected x and h of one floating dtype, but got ", x.scalar_type(), " and ",
              h.scalar_type());
  TORCH_CHECK(h.size(0) == 1 || h.size(0) == x.size(0), where, ": expected h with 1 or ", x.size(0),
              " items, but got ", h.size(0));
  TORCH_CHECK(h.size(1) == 1 || h.size(1) == x.size(1), where, ": expected h with 1 or ", x.size(1),
              " channels, but got ", h.size(1));
  TORCH_CHECK(x.size(2) > 0 && h.size(2) > 0, where, ": expected non-empty signals and filters");
}

at::Tensor overlap_save(const at::Tensor& x, const at::Tensor& h, ConvolutionMode mode,
                        int64_t fft_size) {
  const int64_t taps = h.size(2), shift = output_shift(taps, mode),
                n_outputs    = output_length(x.size(2), taps, mode);
  auto [x_primal, x_tangent] = unpack_dual(x);
  auto [h_primal, h_tangent] = unpack_dual(h);
  if (!x_tangent.defined() && !h_tangent.defined())
    return OverlapSave::apply(x, h, shift, n_outputs, fft_size, SavedDuals{});
  // Bilinear: the tangent is x'∗h + x∗h'.
  at::Tensor y =
      OverlapSave::apply(x_primal, h_primal, shift, n_outputs, fft_size, SavedDuals{{x, h}});
  at::Tensor tangent;
  if (x_tangent.defined())
    tangent = OverlapSave::apply(x_tangent, h_primal, shift, n_outputs, fft_size, SavedDuals{});
  if (h_tangent.defined())
    tangent = add_lazy(
        tangent, OverlapSave::apply(x_primal, h_tangent, shift, n_outputs, fft_size, SavedDuals{}));
  return make_dual(y, tangent);
}

}  // namespace

int64_t fast_fft_size(int64_t n) {
  TORCH_CHECK(n > 0 && n < (int64_t(1) << 52), "fast_fft_size: expected a positive size, but got ",
              n);
  int64_t best = std::numeric_limits<int64_t>::max();
  for (int64_t p5 = 1; p5 < best; p5 *= 5)
    for (int64_t p35 = p5; p35 < best; p35 *= 3) {
      int64_t size = 2 * p35;  // even: pocketfft's real transforms are fastest on even sizes
      while (size < n) size *= 2;
      best = std::min(best, size);
    }
  return best;
}

int64_t output_length(int64_t signal_length, int64_t filter_length, ConvolutionMode mode) {
  return mode == ConvolutionMode::kFull ? signal_length + filter_length - 1 : signal_length;
}

ConvolutionPlan plan_convolution(int64_t signal_length, int64_t filter_length,
                                 ConvolutionMode mode) {
  int64_t whole = whole_signal_fft_size(signal_length, filter_length, mode);
  ConvolutionPlan whole_plan{false, whole, 1, 3 * transform_cost(whole)};  // rfft x and h, irfft
  ConvolutionPlan block_plan =
      best_block_plan(output_length(signal_length, filter_length, mode), filter_length, whole);
  return block_plan.cost < whole_plan.cost ? block_plan : whole_plan;
}

at::Tensor fft_convolve(const at::Tensor& x, const at::Tensor& h, ConvolutionMode mode) {
  check_arguments(x, h, "fft_convolve");
  return overlap_save(x, h, mode, whole_signal_fft_size(x.size(2), h.size(2), mode));
}

at::Tensor block_convolve(const at::Tensor& x, const at::Tensor& h, ConvolutionMode mode,
                          int64_t fft_size) {
  check_arguments(x, h, "block_convolve");
  int64_t taps = h.size(2);
  if (fft_size == 0) {  // the cheapest block size below one whole-signal block (at least one)
    int64_t whole = whole_signal_fft_size(x.size(2), taps, mode);
    fft_size      = best_block_plan(output_length(x.size(2), taps, mode), taps,
                                    std::max(whole, fast_fft_size(2 * taps) + 1))
                   .fft_size;
  }
  TORCH_CHECK(fft_size >= taps, "block_convolve: expected blocks of at least the filter length ",
              taps, ", but got ", fft_size);
  return overlap_save(x, h, mode, fft_size);
}

at::Tensor convolve(const at::Tensor& x, const at::Tensor& h, ConvolutionMode mode) {
  check_arguments(x, h, "convolve");
  return overlap_save(x, h, mode, plan_convolution(x.size(2), h.size(2), mode).fft_size);
}

}  // namespace grafx::dsp
