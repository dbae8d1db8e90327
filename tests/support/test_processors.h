#pragma once
// Small processors for render tests, kept out of the registry: linear, nonlinear, two outlets
// and two inlets, each following the processor contract (pure, batch-first, row n of the output
// depends only on row n of inputs and parameters).

#include <grafx/graph/graph.h>
#include <grafx/processors/registry.h>
#include <grafx/render/render.h>

namespace grafx::testing {

enum class TestKind {
  kLinear,     ///< y = a·x + b·x[n−1], a and b per channel [2]; aux loss "l2" = Σ a²
  kNonlinear,  ///< y = tanh(g·x)·h, g and h [1]
  kSplit,  ///< main -> low, high: low = s·x + (1−s)·x[n−1], high = x − low, s = σ(p) [1]
  kDuck,   ///< main, side -> main: y = main · (1 − σ(k)·tanh(side²)), k [1]
};

std::shared_ptr<const Processor> make_test_processor(const std::string& name, TestKind kind);

/// Processors for the types of random_graph(): p0, p2, ... linear; p1, p3, ... nonlinear;
/// split and duck.
Processors random_graph_processors(const NodeTypes& types);

/// A seeded case the renderers are compared on: a random graph of 6 to 30 processors, 1 to 3
/// inputs and 1 or 2 outputs, multi-port three seeds in four, two seeds in three with some
/// nodes carrying a wet amount (other than ½) and some bypassed; its test processors and
/// parameters; sources of `length` samples, a batch of 3 source sets for odd seeds. Every
/// fifth seed is float64, to be compared to 1e-10; the others float32, to 1e-5.
struct EquivalenceCase {
  Graph graph;
  Processors processors;
  Parameters parameters;
  at::Tensor sources;
  double tolerance = 0;
};
EquivalenceCase equivalence_case(uint64_t seed, int64_t length);

}  // namespace grafx::testing
