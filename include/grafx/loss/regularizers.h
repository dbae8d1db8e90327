#pragma once
/// Regularisers of the pruning paper (Lee et al., DAFx 2024) for fitting a console.
///
/// Gain staging keeps each regularised processor from changing the level of its signal, so that
/// levels are set by the gain/pan nodes (the paper regularises EQ, reverb and delay nodes):
///
///   g(u)            = log(mean over channels and samples of u² + 1e-7)
///   gain_staging[n] = |g(output_n) − g(input_n)|                       (one value per node)
///
/// Processors report their own auxiliary losses per node (e.g. the delay's "radii", see
/// processor.h); `regularization_loss` weights and sums them all:
///
///   R = Σ_key weight[key] · Σ_n aux[key][n]
///
/// with the paper's weights by default: λ_g = 1e-3 for "gain_staging" and 1/2 for "radii"
/// (grafx-prune halves the summed radii loss); and 0.03 for the parametric EQs' "eq_curvature"
/// (ours: the mean square second difference of each EQ's curve in dB, docs/loss.md).
///
///   at::Tensor per_node = grafx::gain_staging_loss(eq_input, eq_output);  // [N]
///   at::Tensor r = grafx::regularization_loss({{"gain_staging", per_node}, {"radii", radii}});

#include <grafx/processors/processor.h>

#include <ATen/Tensor.h>

#include <map>
#include <string>

namespace grafx {

/// [N]: |g(output_n) − g(input_n)| per node (formula above) for `N×C×L` input and output of
/// one processor call. Throws LossError [grafx.loss.shape] or [grafx.loss.dtype] unless both
/// are `N×C×L` alike, float32 or float64, on one device.
at::Tensor gain_staging_loss(const at::Tensor& input, const at::Tensor& output);

/// The weight of each auxiliary loss: {"gain_staging": 1e-3, "radii": 0.5, "eq_curvature": 0.03}.
std::map<std::string, double> default_regularizer_weights();

/// Σ_key weight[key] · Σ aux[key] (a scalar; zero for no losses); a key weighed 0 is left out, so
/// it costs no backward pass and its non-finite values no step. Throws LossError
/// [grafx.loss.unknown_regularizer] for a key without a weight.
at::Tensor regularization_loss(
    const TensorDict& aux_losses,
    const std::map<std::string, double>& weights = default_regularizer_weights());

}  // namespace grafx
