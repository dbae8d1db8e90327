#pragma once
/// What each track's own processing does for a fitted mix: the whole-song loss with the track's
/// processing replaced by the static gain that best matches what it sends on.
///
///   for (const TrackLoss& t : track_losses(fitter))
///     std::cout << t.track << ": " << t.loss << " (fitted: " << fitted_loss << ")\n";
///
/// A track's own nodes are those its `in` node feeds and no other `in` node does: in a console,
/// its strip, not the buses it joins. With them bypassed, each signal they sent on becomes the
/// track itself; scaled per channel by the least-squares gain of what they sent, it is the
/// best static gain in their place. A loss that rises much shows processing that matters; one
/// that barely moves, a track the console treats as little more than a fader.

#include <grafx/fit/fit.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace grafx {

struct TrackLoss {
  int64_t track = 0;          ///< its source: the rank of its `in` node in id order
  std::vector<NodeId> nodes;  ///< its own processor nodes, in id order
  std::vector<double> gain;   ///< the static gain per output channel (linear; 0: silent)
  double loss = 0;            ///< the whole-song loss with that gain in their place
};

/// One entry per track with own processor nodes that are not bypassed, in track order, for the
/// fit's graph and parameters as it renders them now (Fitter::rendered_graph). One render of the
/// whole song finds the gains, then one per track; `progress(done, total)` after each.
std::vector<TrackLoss> track_losses(const Fitter& fitter,
                                    const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace grafx
