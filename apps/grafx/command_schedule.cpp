// grafx schedule: type scheduling and render plans of a graph file.

#include "arguments.h"
#include "commands.h"
#include "console_options.h"
#include "output_folder.h"

#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/plan/adjoint_plan.h>
#include <grafx/plan/render_plan.h>
#include <grafx/processors/registry.h>

#include <iomanip>
#include <iostream>
#include <sstream>

namespace grafx::cli {
namespace {

/// The adjoint plan's options from --frozen, --recompute and --fixed-sources; the types without
/// parameters come from their processors.
template <class Args>
AdjointPlanOptions adjoint_options(const Graph& graph, const Args& args) {
  AdjointPlanOptions options;
  const NodeTypes& types = graph.types();
  if (!args.frozen.empty())
    for (const auto& type : parse_chain(args.frozen, types)) options.frozen_types.insert(type);
  if (!args.recompute.empty())
    for (const auto& type : parse_chain(args.recompute, types))
      options.memory[type] = MemoryPolicy::kRecompute;
  options.source_gradients          = !args.fixed_sources;
  const std::vector<int64_t> counts = graph.count_per_type();
  for (TypeId t = NodeTypes::kMix + 1; t < types.size(); ++t)
    if (counts[size_t(t)] > 0 && make_processor(types[t], {44100})->parameter_specs().empty())
      options.parameterless_types.insert(types.name(t));
  return options;
}

}  // namespace

void add_schedule_command(CLI::App& app) {
  struct Args {
    std::string graph, method = "beam", fixed, json, frozen, recompute;
    ScheduleOptions options;
    bool plan = false, adjoint = false, fixed_sources = false, force = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("schedule", "Schedule a graph's nodes into batched processor calls");
  cmd->add_option("graph", args->graph, "Graph file (.json)")->required();
  cmd->add_option("--method", args->method, "one-by-one, fixed, greedy, beam or optimal")
      ->capture_default_str();
  cmd->add_option("--fixed", args->fixed,
                  "Type order for --method fixed: names or letters, comma-separated "
                  "(default: the console order, chain, mix, chain, mix)");
  cmd->add_option("--width", args->options.beam_width, "Beam width")
      ->capture_default_str()
      ->check(whole_number(1));
  cmd->add_option("--depth", args->options.beam_depth, "Beam look-ahead depth")
      ->capture_default_str()
      ->check(whole_number(1));
  cmd->add_option("--budget", args->options.time_budget_s, "Time budget of the optimal search (s)")
      ->capture_default_str()
      ->check(finite_number(0, false));
  cmd->add_flag("--plan", args->plan, "Print the render plan");
  CLI::Option* adjoint = cmd->add_flag(
      "--adjoint", args->adjoint,
      "Print the adjoint plan: the render plan's reverse program (the backward pass)");
  cmd->add_option("--frozen", args->frozen,
                  "--adjoint: types whose parameters get no gradient (names or letters, "
                  "comma-separated)")
      ->needs(adjoint);
  cmd->add_option("--recompute", args->recompute,
                  "--adjoint: types whose forward pass is recomputed in the backward pass "
                  "instead of saved")
      ->needs(adjoint);
  cmd->add_flag("--fixed-sources", args->fixed_sources, "--adjoint: the sources get no gradient")
      ->needs(adjoint);
  cmd->add_option("--json", args->json,
                  "Write the render plan (with --adjoint: the adjoint plan) as JSON to this file");
  add_force_flag(*cmd, args->force);
  cmd->callback([args] {
    Graph graph             = load_graph_file(args->graph);
    GraphTensor tensor      = to_tensor(graph);
    ScheduleOptions options = args->options;
    options.method          = parse_schedule_method(args->method);
    if (options.method == ScheduleMethod::kFixed)
      options.fixed_order = args->fixed.empty() ? console_fixed_order(default_console_chain())
                                                : parse_chain(args->fixed, graph.types());
    else if (!args->fixed.empty())
      throw ScheduleError("grafx.schedule.invalid_options", "--fixed needs --method fixed");
    if (!args->json.empty()) {
      check_not_an_input(args->json, {args->graph});
      check_writable(args->json, args->force);
    }
    Schedule schedule = schedule_graph(tensor, options);
    std::cout << "method: " << to_string(schedule.method);
    if (schedule.method == ScheduleMethod::kOptimal)
      std::cout << (schedule.proven_optimal ? " (proven optimal)"
                                            : " (not proven; lower bound " +
                                                  std::to_string(schedule.lower_bound) + ")");
    std::cout << "\nprocessor calls: " << schedule.n_calls() << " (" << tensor.n_nodes()
              << " nodes, " << schedule.dead_rows.size() << " dead)\n"
              << "types: " << schedule.type_sequence(graph.types()) << "\n"
              << "time: " << std::fixed << std::setprecision(2) << schedule.seconds * 1000
              << " ms\n";
    if (args->plan || args->adjoint || !args->json.empty()) {
      RenderPlan plan = make_render_plan(tensor, schedule);
      if (args->plan) std::cout << plan.to_string();
      std::string json = plan.to_json();
      if (args->adjoint) {
        AdjointPlan adjoint = make_adjoint_plan(plan, adjoint_options(graph, *args));
        std::cout << adjoint.to_string();
        json = adjoint.to_json();
      }
      if (!args->json.empty()) {
        write_text_file(args->json, json, args->force);
        std::cout << (args->adjoint ? "adjoint plan: " : "plan: ") << args->json << "\n";
      }
    }
  });
}

}  // namespace grafx::cli
