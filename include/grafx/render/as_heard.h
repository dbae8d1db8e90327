#pragma once
/// A processor node as a graph renders it, for pictures and measurements of one node as it is
/// heard in its graph (the fit report's curves "as heard"): the processor's own pass, then the
/// render's rule for the node's properties. A bypassed node passes on each outlet's passed inlet
/// (NodeType::passed_inlet; silence where there is none); a dry/wet node mixes each outlet with
/// it, w·f(u) + (1 − w)·dry (mix_dry_wet), with the node's raw wet amount given.
///
///   auto heard = as_heard(*processor, graph.node(id), values.wet.narrow(0, row, 1));
///   Plot plot  = processor_response(*heard, own_row, sample_rate);

#include <grafx/graph/graph.h>
#include <grafx/processors/processor.h>

#include <memory>

namespace grafx {

/// `processor` as the render renders a node of it with `properties` and raw wet amount
/// `raw_wet` ([1, 1]; read where the node is dry/wet; undefined: heard wet, as where a
/// reference's wet amount is unknown), automation aside: the parameters given are static.
/// Keeps a reference to `processor`, which must outlive it.
std::unique_ptr<Processor> as_heard(const Processor& processor, const NodeProperties& properties,
                                    const at::Tensor& raw_wet = {});

}  // namespace grafx
