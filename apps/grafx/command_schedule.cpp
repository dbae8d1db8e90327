// grafx schedule: type scheduling and render plans of a graph file.

#include "commands.h"

#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/plan/render_plan.h>

#include <iomanip>
#include <iostream>
#include <sstream>

namespace grafx::cli {
void add_schedule_command(CLI::App& app) {
  struct Args {
    std::string graph, method = "beam", fixed, json;
    ScheduleOptions options;
    bool plan = false, force = false;
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
  cmd->add_option("--json", args->json, "Write the render plan as JSON to this file");
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
    if (args->plan || !args->json.empty()) {
      RenderPlan plan = make_render_plan(tensor, schedule);
      if (args->plan) std::cout << plan.to_string();
      if (!args->json.empty()) {
        write_text_file(args->json, plan.to_json(), args->force);
        std::cout << "plan: " << args->json << "\n";
      }
    }
  });
}

}  // namespace grafx::cli
