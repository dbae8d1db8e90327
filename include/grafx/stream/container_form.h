#pragma once
/// The streaming form of a container: its members' forms in series, summed, or on bands.

#include <grafx/stream/form.h>

#include <memory>
#include <vector>

namespace grafx {

/// A container's members in series (no weights) or summed with `weights` (container_form.cpp).
std::unique_ptr<NodeStream> container_stream(std::vector<std::unique_ptr<NodeStream>> members,
                                             std::vector<float> weights, int64_t channels,
                                             int64_t max_block);
/// A multiband container: `split`'s outlets (a crossover's bands), each through its member and
/// mixed with itself by its `wet` amount, summed (container_form.cpp).
std::unique_ptr<NodeStream> band_stream(std::unique_ptr<NodeStream> split,
                                        std::vector<std::unique_ptr<NodeStream>> members,
                                        std::vector<float> wet, int64_t max_block);

}  // namespace grafx
