#pragma once
/// Starting values from the data, before the first gradient step (issue 18's initialisation).
/// Three parts, in this order, each optional:
///
/// 1. Typical starts: nodes whose type's descriptor names a `fit_start` (dynamics: smoothing
///    10 ms instead of 0.05 ms, a gate at −50 dB for silence only; a high-pass at 20 Hz, not
///    1 kHz) are set to it.
///
/// 2. Channel gains by least squares: each track's contribution to the mix through the
///    graph is rendered alone (batched renders of an excerpt), then the non-negative gains
///    a_kc, per track k and output channel c, that best sum these contributions to the mix,
///
///      min_a Σ_c ‖m_c − Σ_k a_kc·y_kc‖²,   a ≥ 0,
///
///    are folded into each track's first channel-gain node (a node whose descriptor names a
///    `channel_gain_parameter`, the gain_pan of a console track): its raw log gains move by
///    log a_kc. A node with a wet amount w passes (1 − w + w·g) of its input, so there the
///    level heard moves by less (ChannelGainFit::heard). Per channel, so each track starts at its
///    level and on its side of the mix (a fit from a centred start can otherwise settle in a
///    left/right-mirrored solution). Exact for graphs that are linear in each track's gain (gains,
///    EQs, delays, reverbs); approximate through dynamics.
///
/// 3. EQ from smoothed spectral ratios: with those gains, per third-octave band b the
///    non-negative power gains w_kb that best sum the tracks' band powers to the mix's, over
///    the excerpt's frames t,
///
///      min_w Σ_t (M_b[t] − Σ_k w_kb·P_kb[t])²,   w ≥ 0,
///
///    interpolated in log frequency, as ½·ln w (clamped to ±max_eq_db), are added to each
///    track's first spectral-gain node (a descriptor's `spectral_gain_parameter`: the EQ's
///    log-magnitudes). With one track it is the smoothed ratio |M|²/|Y|²; with several, each
///    track takes the share of the band its level over time explains. Where no track has such
///    a node (a parametric EQ has bands instead), the part is not run and its step says so.
///
/// Given a loss (the fitter passes its whole-song loss), parts 2 and 3, fits to the data, are
/// kept only where they lower it: one that raises it (the EQ from spectral ratios can, on real
/// stems: 2.19 → 2.63) is undone, and DataInitialisation::steps says so. Part 1 is kept
/// always: typical settings are for the gradients, not the first loss.
///
///   DataInitialisation done = initialise_from_data(graph, processors, plan, parameters,
///                                                  tracks, mix, sample_rate, {}, loss);

#include <grafx/graph/graph.h>
#include <grafx/plan/render_plan.h>
#include <grafx/processors/registry.h>
#include <grafx/render/render.h>

#include <ATen/Tensor.h>

#include <functional>
#include <string>
#include <vector>

namespace grafx {

struct InitialisationOptions {
  bool typical_starts = true;  ///< 1: the descriptors' `fit_start` settings
  bool channel_gains  = true;  ///< 2: least-squares gains per track and channel
  /// 3: each track's EQ from smoothed spectral ratios. Off by default: it starts closer but
  /// ends no better after 500 steps (docs/fitting.md, "Evaluation").
  bool spectral_eq       = false;
  double excerpt_seconds = 10;  ///< the middle of the song the fits look at
  double max_eq_db       = 12;  ///< bound on the EQ gains set

  static InitialisationOptions none() { return {false, false, false}; }
};

struct ChannelGainFit {
  /// Per track (in id order), the channel-gain node set, or -1 for a track without one (its
  /// chain branches before one, or holds none).
  std::vector<NodeId> nodes;
  at::Tensor gains;  ///< [K, 2] float64: the least-squares gains (at least 1e-3; 1 where no node)
  /// [K, 2] float64: what they did to each track's level heard, per channel: the gains where
  /// the node has no wet amount, less where it has (1 where no node)
  at::Tensor heard;
  double error_before = 0;  ///< ‖m − Σ_k y_k‖² / ‖m‖² on the excerpt, before
  double error_found  = 0;  ///< the same with the gains found (as if fully wet)
  double error_after  = 0;  ///< the same with the levels heard: what the graph now renders
};

struct SpectralEqFit {
  std::vector<NodeId> nodes;  ///< per track, the spectral-gain node set, or -1
  at::Tensor band_hz;         ///< [B] float64: centres of the bands
  at::Tensor gains_db;        ///< [K, B] float64: the gains set per band (0 where no node)
  double error_before = 0;    ///< Σ (M − Σ_k P_k)² / Σ M² over bands and frames, before
  double error_after  = 0;    ///< the same with the gains
};

/// One part run, with the loss before and after it (NaN where not checked: typical starts, or
/// no loss given).
struct InitialisationStep {
  std::string name;    ///< "typical starts", "track gains by least squares", ...
  std::string detail;  ///< what it did, e.g. "relative error on the excerpt 1.045 -> 0.835"
  double loss_before = 0, loss_after = 0;
  bool kept = true;  ///< false: it raised the loss and was undone
};

/// What initialise_from_data did; a part not run, or undone, is left empty (tensors undefined).
struct DataInitialisation {
  std::vector<NodeId> started;  ///< nodes set to their type's fit start
  ChannelGainFit gains;
  SpectralEqFit eq;
  std::vector<InitialisationStep> steps;  ///< every part run, in order, kept or not
};

/// Runs the parts `options` asks for on `parameters` (in place, without gradient tracking).
/// `tracks` K×C×L, `mix` C×L (stereo) as the fitter takes them. `loss`, if given, returns the
/// loss of `parameters` as they are; a fit to the data after which it is not lower is undone.
DataInitialisation initialise_from_data(const Graph& graph, const Processors& processors,
                                        const RenderPlan& plan, Parameters& parameters,
                                        const at::Tensor& tracks, const at::Tensor& mix,
                                        SampleRate sample_rate,
                                        const InitialisationOptions& options,
                                        const std::function<double()>& loss = {});

/// Part 2 alone.
ChannelGainFit fit_channel_gains(const Graph& graph, const Processors& processors,
                                 const RenderPlan& plan, Parameters& parameters,
                                 const at::Tensor& tracks, const at::Tensor& mix,
                                 SampleRate sample_rate, double excerpt_seconds = 10);

/// Part 3 alone.
SpectralEqFit fit_spectral_eq(const Graph& graph, const Processors& processors,
                              const RenderPlan& plan, Parameters& parameters,
                              const at::Tensor& tracks, const at::Tensor& mix,
                              SampleRate sample_rate, double excerpt_seconds = 10,
                              double max_eq_db = 12);

}  // namespace grafx
