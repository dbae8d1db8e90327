#pragma once
/// Starting values from the data, before the first gradient step (issue 18's initialisation).
///
/// Channel gains by least squares: each track's contribution to the mix through the initial
/// graph is rendered alone (batched renders of an excerpt), then the non-negative gains a_kc,
/// per track k and output channel c, that best sum these contributions to the target mix,
///
///   min_a Σ_c ‖m_c − Σ_k a_kc·y_kc‖²,   a ≥ 0,
///
/// are folded into each track's first channel-gain node (a node whose descriptor names a
/// `channel_gain_parameter`, the gain_pan of a console track): its raw log gains move by
/// log a_kc. Per channel, so each track starts at its level and on its side of the mix (a fit
/// from a centred start can otherwise settle in a left/right-mirrored solution). Exact for
/// graphs that are linear in each track's gain (gains, EQs, delays, reverbs); approximate
/// through dynamics.
///
///   ChannelGainFit fit = fit_channel_gains(graph, processors, plan, parameters, tracks, mix);

#include <grafx/graph/graph.h>
#include <grafx/plan/render_plan.h>
#include <grafx/processors/registry.h>
#include <grafx/render/render.h>

#include <ATen/Tensor.h>

#include <vector>

namespace grafx {

struct ChannelGainFit {
  /// Per track (in id order), the channel-gain node set, or -1 for a track without one (its
  /// chain branches before one, or holds none).
  std::vector<NodeId> nodes;
  at::Tensor gains;         ///< [K, 2] float64: the least-squares gains (1 where no node)
  double error_before = 0;  ///< ‖m − Σ_k y_k‖² / ‖m‖² on the excerpt, before
  double error_after  = 0;  ///< the same with the gains
};

/// Fits and applies the gains to `parameters` (in place, without gradient tracking).
/// `tracks` K×C×L, `mix` C×L (stereo) as the fitter takes them; the excerpt is the middle
/// `excerpt_seconds` of the song (all of it when shorter).
ChannelGainFit fit_channel_gains(const Graph& graph, const Processors& processors,
                                 const RenderPlan& plan, Parameters& parameters,
                                 const at::Tensor& tracks, const at::Tensor& mix,
                                 SampleRate sample_rate, double excerpt_seconds = 10);

}  // namespace grafx
