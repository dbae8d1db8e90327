// Bindings of the graph, schedule and plan layers: Graph, consoles, the tensor form, schedules
// and render plans.

#include "bindings.h"

#include <grafx/error.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/io/draw.h>
#include <grafx/plan/render_plan.h>

#include <optional>
#include <tuple>

namespace grafx::python {

namespace {

py::dict node_to_python(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  py::dict result;
  result["id"]        = node.id;
  result["type"]      = graph.types().name(node.type);
  result["name"]      = node.name;
  result["dry_wet"]   = node.dry_wet;
  result["bypassed"]  = node.bypassed;
  result["automated"] = node.automated;
  return result;
}

py::tuple edge_to_python(const Graph& graph, const Edge& edge) {
  const NodeTypes& types = graph.types();
  return py::make_tuple(edge.source, edge.dest,
                        types[graph.node(edge.source).type].outlets.at(edge.outlet),
                        types[graph.node(edge.dest).type].inlets.at(edge.inlet));
}

py::list edges_to_python(const Graph& graph, const std::vector<Edge>& edges) {
  py::list result;
  for (const Edge& edge : edges) result.append(edge_to_python(graph, edge));
  return result;
}

py::dict type_to_python(const NodeType& type) {
  py::dict result;
  result["name"]      = type.name;
  result["inlets"]    = type.inlets;
  result["outlets"]   = type.outlets;
  result["processor"] = type.processor_name();
  result["options"]   = options_to_python(type.options);
  return result;
}

using Ports = std::optional<std::vector<std::string>>;

/// A type from Python: ports left out are the processor's (when it is known) or `main`.
NodeType type_from_python(const std::string& name, const Ports& inlets, const Ports& outlets,
                          const std::string& processor, const py::dict& options) {
  NodeType type{name,
                {"main"},
                {"main"},
                processor,
                options_from_python(options, "node type \"" + name + "\"")};
  if (const ProcessorDescriptor* descriptor = find_processor(type.processor_name())) {
    const NodeType own = descriptor->make({44100, type.options})->node_type();
    type.inlets        = own.inlets;
    type.outlets       = own.outlets;
  }
  if (inlets) type.inlets = *inlets;
  if (outlets) type.outlets = *outlets;
  return type;
}

/// A function of a graph and schedule options (a schedule, a plan) bound as f(graph, method,
/// beam_width, beam_depth, time_budget_s, fixed_order), run without the GIL on a copy of the
/// graph (the caller's may change meanwhile).
template <class F>
void def_scheduled(py::module_& m, const char* name, F f) {
  m.def(
      name,
      [f](const Graph& graph, const std::string& method, int64_t beam_width, int64_t beam_depth,
          double time_budget_s, const std::vector<std::string>& fixed_order) {
        ScheduleOptions options(parse_schedule_method(method));
        options.beam_width    = beam_width;
        options.beam_depth    = beam_depth;
        options.time_budget_s = time_budget_s;
        options.fixed_order   = fixed_order;
        Graph copy            = graph;
        py::gil_scoped_release released;
        return f(std::move(copy), options);
      },
      py::arg("graph"), py::arg("method"), py::arg("beam_width"), py::arg("beam_depth"),
      py::arg("time_budget_s"), py::arg("fixed_order"));
}

CompiledPlan compile_plan(Graph graph, Schedule schedule) {
  RenderPlan plan = make_render_plan(to_tensor(graph), schedule);
  return {std::move(plan), std::move(graph), std::move(schedule)};
}

// Pickled states: a graph is its graph file's text (which keeps every type, id, name, flag,
// port, edge and the next id); a schedule its fields; a plan its graph and schedule.

py::tuple graph_state(const Graph& graph) {
  return py::make_tuple(kPickleVersion, graph_to_json(graph));
}

Graph graph_from_state(const py::tuple& state) {
  check_pickled_state(state, 1, "Graph");
  return graph_from_json(state[1].cast<std::string>(), "pickled grafx.Graph");
}

py::tuple schedule_state(const Schedule& s) {
  return py::make_tuple(kPickleVersion, s.steps, s.step_types, s.dead_rows, to_string(s.method),
                        s.proven_optimal, s.lower_bound, s.states_expanded, s.seconds);
}

Schedule schedule_from_state(const py::tuple& state) {
  check_pickled_state(state, 8, "Schedule");
  Schedule s;
  s.steps           = state[1].cast<std::vector<std::vector<int64_t>>>();
  s.step_types      = state[2].cast<std::vector<TypeId>>();
  s.dead_rows       = state[3].cast<std::vector<int64_t>>();
  s.method          = parse_schedule_method(state[4].cast<std::string>());
  s.proven_optimal  = state[5].cast<bool>();
  s.lower_bound     = state[6].cast<int64_t>();
  s.states_expanded = state[7].cast<int64_t>();
  s.seconds         = state[8].cast<double>();
  return s;
}

py::list steps_to_python(const std::vector<std::vector<int64_t>>& steps) {
  py::list result;
  for (const auto& step : steps) result.append(py::cast(step));
  return result;
}

// A send bus's tracks, by name or index (the range is build_console's to check).
std::vector<int64_t> send_tracks(const ConsoleOptions& options, const std::string& bus,
                                 const py::object& tracks) {
  const std::string context = "send to \"" + bus + "\"";
  auto refuse               = [&](const std::string& what) {
    throw GraphError("grafx.graph.invalid_console", context + ": " + what);
  };
  if (!py::isinstance<py::list>(tracks) && !py::isinstance<py::tuple>(tracks))
    refuse("expected a list of tracks, but got " + py::repr(tracks).cast<std::string>());
  std::vector<int64_t> indices;
  for (const py::handle track : tracks) {
    const std::string shown = py::repr(track).cast<std::string>();
    if (py::isinstance<py::str>(track)) {
      indices.push_back(options.track_named(track.cast<std::string>(), context));
      continue;
    }
    if (!py::isinstance<py::int_>(track) || py::isinstance<py::bool_>(track))
      refuse("expected a track name or index, but got " + shown);
    try {
      indices.push_back(track.cast<int64_t>());
    } catch (const py::cast_error&) {
      refuse("track index " + shown + " is out of range");
    }
  }
  return indices;
}

}  // namespace

void bind_graph(py::module_& m) {
  py::class_<Graph>(m, "Graph", "A directed acyclic multigraph of typed processor nodes.")
      .def(py::init([](const py::object& config) {
             Graph graph(registry_node_types());
             if (config.is_none()) return graph;
             const auto refuse = [](const py::handle& what, const std::string& where) {
               // "incompatible" as pybind11's own argument errors, which grafx codes alike
               throw py::type_error("Graph(): incompatible " + where + " " +
                                    std::string(py::repr(what)) +
                                    ": expected a dict {type: {\"inlets\": [...], \"outlets\": "
                                    "[...], \"processor\": ..., \"options\": {...}}} or a list "
                                    "of type names");
             };
             if (!py::isinstance<py::dict>(config) && !py::isinstance<py::list>(config) &&
                 !py::isinstance<py::tuple>(config))
               refuse(config, "config");
             if (py::isinstance<py::dict>(config)) {  // {name: {"inlets": [...], ...}}
               for (const auto& item : config.cast<py::dict>()) {
                 if (!py::isinstance<py::dict>(item.second)) refuse(item.second, "type fields");
                 const std::string name = py::str(item.first);
                 const py::dict fields  = item.second.cast<py::dict>();
                 auto get               = [&](const char* key) -> py::object {
                   if (fields.contains(key)) return fields[key];
                   return py::none();
                 };
                 graph.add_type(type_from_python(
                     name, get("inlets").cast<Ports>(), get("outlets").cast<Ports>(),
                     get("processor").is_none() ? "" : get("processor").cast<std::string>(),
                     get("options").is_none() ? py::dict() : get("options").cast<py::dict>()));
               }
             } else {  // a list of type names
               for (const auto& name : config) {
                 if (!py::isinstance<py::str>(name)) refuse(name, "type name");
                 if (!graph.types().contains(py::str(name)))
                   graph.add_type(type_from_python(py::str(name), {}, {}, "", py::dict()));
               }
             }
             return graph;
           }),
           py::arg("config") = py::none())
      .def(
          "add_type",
          [](Graph& g, const std::string& name, const Ports& inlets, const Ports& outlets,
             const std::string& processor, const py::dict& options) {
            return g.add_type(type_from_python(name, inlets, outlets, processor, options));
          },
          py::arg("name"), py::arg("inlets") = py::none(), py::arg("outlets") = py::none(),
          py::arg("processor") = "", py::arg("options") = py::dict(),
          "Declares a node type `name` (ports left out are its processor's, or `main`); "
          "`processor` names the registered processor it runs (default: `name`) with its "
          "`options`. Returns its type id.")
      .def_property_readonly(
          "types",
          [](const Graph& g) {
            py::list result;
            for (const NodeType& type : g.types().all()) result.append(type_to_python(type));
            return result;
          },
          "The node types, each a dict with `name`, `inlets`, `outlets`, `processor` and "
          "`options`.")
      .def("add", &Graph::add, py::arg("node_type"), py::arg("name") = "",
           "Adds a node of a known type (with an optional free-text name); returns its id. "
           "GraphError for an unknown type.")
      .def("add_serial_chain", &Graph::add_serial_chain, py::arg("node_types"),
           py::arg("names") = std::vector<std::string>{},
           "Adds a chain of nodes of `node_types` connected main -> main; returns the ids (first, "
           "last). `names`, if given, one per type.")
      .def("connect", &Graph::connect, py::arg("source"), py::arg("dest"),
           py::arg("outlet") = "main", py::arg("inlet") = "main",
           "Connects port `outlet` of node `source` to port `inlet` of node `dest`. GraphError for "
           "an unknown node or port, a repeated edge, a self-loop or a cycle (the graph is left "
           "unchanged).")
      .def("disconnect", &Graph::disconnect, py::arg("source"), py::arg("dest"),
           py::arg("outlet") = "main", py::arg("inlet") = "main",
           "Removes the edge from `outlet` of `source` to `inlet` of `dest`; GraphError "
           "(grafx.graph.unknown_edge) if there is none.")
      .def(
          "remove",
          [](Graph& g, NodeId id) {
            // Edge ports are named by the types of nodes that no longer exist afterwards.
            const std::vector<Edge> in = g.in_edges(id), out = g.out_edges(id);
            py::list in_edges = edges_to_python(g, in), out_edges = edges_to_python(g, out);
            g.remove(id);
            return py::make_tuple(in_edges, out_edges);
          },
          py::arg("node"), "Removes a node; returns its (incoming, outgoing) edges.")
      .def("bypass", &Graph::bypass, py::arg("node"),
           "Removes a processor node and connects each node that fed it to each node it fed (each "
           "outlet passing on its pass-through inlet); a bypassed send passes nothing, and takes "
           "with it a bus left with nothing. Returns the removed node ids. GraphError if the new "
           "edges would repeat existing ones, or if a node other than a mix or a bypassed one "
           "would be left with nothing at an inlet.")
      .def("set_name", &Graph::set_name, py::arg("node"), py::arg("name"),
           "Sets a node's free-text name (e.g. \"bass.eq\").")
      .def("set_dry_wet", &Graph::set_dry_wet, py::arg("node"), py::arg("dry_wet") = true,
           "Gives a processor node a learnable wet amount (its type's parameter `dry_wet`), or "
           "takes it away. GraphError (grafx.graph.node_property) for in, out and mix nodes.")
      .def("set_bypassed", &Graph::set_bypassed, py::arg("node"), py::arg("bypassed") = true,
           "Marks a processor node bypassed (kept, rendered as a pass-through, its parameters "
           "kept), or not. GraphError (grafx.graph.node_property) for in, out and mix nodes.")
      .def("set_automated", &Graph::set_automated, py::arg("node"), py::arg("parameter"),
           py::arg("automated") = true,
           "Lets a processor node's parameter (by raw name, e.g. \"log_gain\" or \"dry_wet\") "
           "follow an automation curve, the type's parameter \"<name>@curve\" of shape "
           "[N, points, ...], or stay constant. GraphError (grafx.graph.node_property) for in, "
           "out and mix nodes; renders refuse parameters the processor cannot automate "
           "(grafx.render.automation).")
      .def_property(
          "automation",
          [](const Graph& g) {
            return py::make_tuple(g.automation().rate_hz, g.automation().points);
          },
          [](Graph& g, const std::pair<double, int64_t>& clock) {
            g.set_automation({clock.first, clock.second});
          },
          "The automation clock (rate_hz, points): point i of every curve lies at i / rate_hz "
          "seconds of the song. GraphError (grafx.graph.automation) for a rate that is not "
          "positive or fewer than one point.")
      .def("node", &node_to_python, py::arg("node"),
           "A node as a dict with `id`, `type`, `name`, `dry_wet`, `bypassed` and `automated`. "
           "GraphError "
           "(grafx.graph.unknown_node) for an unknown id.")
      .def("nodes", &Graph::nodes, "The ids of all nodes, ascending.")
      .def("nodes_of_type", &Graph::nodes_of_type, py::arg("node_type"),
           "The ids of the nodes of a type, ascending.")
      .def(
          "edges", [](const Graph& g) { return edges_to_python(g, g.edges()); },
          "All edges as tuples (source, dest, outlet, inlet), sorted.")
      .def(
          "in_edges", [](const Graph& g, NodeId id) { return edges_to_python(g, g.in_edges(id)); },
          "The edges into a node, as tuples (source, dest, outlet, inlet), sorted by inlet.")
      .def(
          "out_edges",
          [](const Graph& g, NodeId id) { return edges_to_python(g, g.out_edges(id)); },
          "The edges out of a node, as tuples (source, dest, outlet, inlet), sorted by outlet.")
      .def("predecessors", &Graph::predecessors,
           "The distinct nodes with an edge into a node, ascending.")
      .def("successors", &Graph::successors, "The distinct nodes a node has an edge to, ascending.")
      .def("topological_order", &Graph::topological_order,
           "The node ids in a topological order (among ready nodes, the smallest id first).")
      .def("__contains__", &Graph::contains)
      .def("__len__", &Graph::n_nodes)
      .def_property_readonly("num_nodes", &Graph::n_nodes, "The number of nodes.")
      .def_property_readonly("num_edges", &Graph::n_edges, "The number of edges.")
      .def_property_readonly("counter", &Graph::next_id, "The id the next add returns.")
      .def(
          "validate",
          [](const Graph& g) {
            py::list result;
            for (const ValidationIssue& issue : g.validate())
              result.append(py::make_tuple(issue.code, issue.node, issue.message));
            return result;
          },
          "The problems that make the graph unrenderable (no in, no out, an unconnected inlet), as "
          "tuples (code, node, message); node is -1 for the whole graph. Empty when valid.")
      .def("check", &Graph::check, "Raises a GraphError for the first problem `validate` finds.")
      .def("to_json", &graph_to_json,
           "The graph as the text of a graph file (docs/graph-format.md).")
      .def_static(
          "from_json",
          [](const std::string& text, const std::string& origin) {
            return graph_from_json(text, origin, registry_node_types());
          },
          py::arg("text"), py::arg("origin") = "graph",
          "A graph from the text of a graph file; `origin` names it in error messages. GraphError "
          "or IoError for malformed text.")
      .def_static(
          "load", [](const std::string& path) { return load_graph(path, registry_node_types()); },
          py::arg("path"), "Reads a graph file (the CLI's JSON). IoError if it cannot be read.")
      .def("save", &save_graph, py::arg("path"), py::arg("overwrite") = false,
           "Writes the graph file (the CLI's JSON), atomically; IoError rather than replace a file "
           "unless `overwrite`.")
      .def(
          "to_dot",
          [](const Graph& g, bool vertical, bool show_ids, bool strips, const std::string& title) {
            return graph_to_dot(g, {vertical, show_ids, title, strips});
          },
          py::arg("vertical") = false, py::arg("show_ids") = false, py::arg("strips") = false,
          py::arg("title") = "",
          "The graph in Graphviz's dot language: top to bottom if `vertical`, with node ids if "
          "`show_ids`, console tracks as strips if `strips`, under `title`.")
      .def(
          "draw",
          [](const Graph& g, const std::string& path, bool vertical, bool show_ids, bool strips,
             const std::string& title, bool overwrite) {
            draw_graph(g, path, {vertical, show_ids, title, strips}, overwrite);
          },
          py::arg("path"), py::arg("vertical") = false, py::arg("show_ids") = false,
          py::arg("strips") = false, py::arg("title") = "", py::arg("overwrite") = false,
          "Draws the graph with Graphviz into `path` (.svg, .png, .pdf or .dot, by its extension), "
          "with `to_dot`'s options; IoError rather than replace a file unless `overwrite`.")
      .def(py::pickle(&graph_state, &graph_from_state))
      .def(
          "copy", [](const Graph& g) { return Graph(g); }, "An independent copy of the graph.")
      .def("__copy__", [](const Graph& g) { return Graph(g); })
      .def("__deepcopy__", [](const Graph& g, py::dict) { return Graph(g); })
      .def("__eq__", [](const Graph& a, const Graph& b) { return a == b; })
      .def("__str__", &Graph::to_string)
      .def("__repr__", [](const Graph& g) {
        return "<grafx.Graph with " + std::to_string(g.n_nodes()) + " nodes & " +
               std::to_string(g.n_edges()) + " edges>";
      });

  m.def(
      "mixing_console",
      [](int64_t n_tracks, const std::vector<int64_t>& track_groups,
         const std::vector<std::string>& chain, bool dry_wet,
         const std::vector<std::string>& track_names, const Graph* types,
         const std::vector<std::string>& master_chain,
         const std::vector<std::tuple<std::string, std::vector<std::string>, py::object>>& sends) {
        ConsoleOptions options;
        options.n_tracks     = n_tracks;
        options.track_groups = track_groups;
        options.chain        = chain;
        options.dry_wet      = dry_wet;
        options.track_names  = track_names;
        options.master_chain = master_chain;
        for (const auto& [name, bus_chain, tracks] : sends)
          options.sends.push_back(SendBus{name, bus_chain, send_tracks(options, name, tracks)});
        return build_console(options, types ? types->types() : registry_node_types()).graph;
      },
      py::arg("n_tracks"), py::arg("track_groups"), py::arg("chain"), py::arg("dry_wet"),
      py::arg("track_names"), py::arg("types"), py::arg("master_chain"), py::arg("sends"));
  m.def("chain_from_letters", &chain_from_letters, py::arg("letters"),
        "The processor type names of chain letters (\"ecg\" -> [\"eq\", \"compressor\", "
        "\"gain_pan\"]); ProcessorError for an unknown letter.");
  m.def("default_console_chain", &default_console_chain,
        "The type names of the pruning paper's console chain e-c-n-s-g-d-r.");
  m.def("even_groups", &ConsoleOptions::even_groups, py::arg("n_tracks"), py::arg("n_groups"),
        "The subgroup of each of `n_tracks` tracks split into `n_groups` contiguous, near-equal "
        "subgroups.");
  m.def(
      "prune_randomly",
      [](Graph& graph, uint64_t seed) {
        return prune_randomly(graph, {seed, random_pruning_rates()});
      },
      py::arg("graph"), py::arg("seed") = 0,
      "Bypasses processor nodes of `graph` (in place) at the pruning paper's per-type rates, "
      "deterministically for `seed`; returns the bypassed node ids.");

  py::class_<GraphTensor>(m, "GraphTensor", "The tensor form of a graph (graph neural networks).")
      .def_readonly("node_types", &GraphTensor::node_types,
                    "The type id of each node row, int64 [V].")
      .def_readonly("edge_index", &GraphTensor::edge_index,
                    "Source and destination rows of each edge, int64 [2, E].")
      .def_readonly("edge_ports", &GraphTensor::edge_ports,
                    "Outlet and inlet index of each edge, int64 [E, 2].")
      .def_readonly("type_counts", &GraphTensor::type_counts,
                    "The number of nodes of each type, int64 [number of types].")
      .def_readonly("node_ids", &GraphTensor::node_ids, "The graph's node id of each row.")
      .def_property_readonly(
          "node_names",
          [](const GraphTensor& t) {
            std::vector<std::string> names;
            for (const NodeProperties& node : t.node_properties) names.push_back(node.name);
            return names;
          },
          "The name of each row's node.")
      .def_property_readonly(
          "type_names",
          [](const GraphTensor& t) {
            std::vector<std::string> names;
            for (const NodeType& type : t.types.all()) names.push_back(type.name);
            return names;
          },
          "The name of each type id.")
      .def_property_readonly("num_nodes", &GraphTensor::n_nodes, "The number of nodes V.")
      .def_property_readonly("num_edges", &GraphTensor::n_edges, "The number of edges E.")
      .def("to_graph", &to_graph,
           "The Graph this tensor form describes (ids, names and types kept).")
      .def("__repr__", &GraphTensor::to_string);
  m.def("to_tensor", &to_tensor, py::arg("graph"),
        "The tensor form of a graph (a GraphTensor), for graph neural networks; GRAFX's name is "
        "convert_to_tensor.");

  py::class_<Schedule>(
      m, "Schedule",
      "A render schedule: the node rows (of the graph's tensor form) each processor call renders "
      "together, step 0 the `in` nodes and the last the `out` nodes.")
      .def(py::pickle(&schedule_state, &schedule_from_state))
      .def_property_readonly(
          "steps", [](const Schedule& s) { return steps_to_python(s.steps); },
          "The node rows of each step, a list of lists; step 0 is `in`, the last `out`.")
      .def_readonly("step_types", &Schedule::step_types, "The type id of each step.")
      .def_readonly("dead_rows", &Schedule::dead_rows,
                    "Rows on no path from an `in` to an `out`, ascending; not scheduled.")
      .def_property_readonly(
          "method", [](const Schedule& s) { return to_string(s.method); },
          "The method that made it (\"optimal\", \"one-by-one\", \"fixed\", \"greedy\" or "
          "\"beam\").")
      .def_readonly("proven_optimal", &Schedule::proven_optimal,
                    "Whether no schedule with fewer calls exists (the optimal search proved it).")
      .def_readonly("lower_bound", &Schedule::lower_bound,
                    "The optimal search's best lower bound on the number of calls.")
      .def_readonly("seconds", &Schedule::seconds, "Time spent scheduling, in seconds.")
      .def_property_readonly("num_calls", &Schedule::n_calls,
                             "Processor calls: the steps other than `in` and `out`.")
      .def("step_of_rows", &Schedule::step_of_rows, py::arg("num_rows"),
           "The step of each of `num_rows` rows, -1 for dead rows.")
      .def(
          "type_sequence",
          [](const Schedule& s, const GraphTensor& t) { return s.type_sequence(t.types); },
          "The type names of the steps, named by the tensor form's types: \"in, eq, compressor, "
          "mix, out\".");
  def_scheduled(m, "schedule", [](const Graph& graph, const ScheduleOptions& options) {
    return schedule_graph(to_tensor(graph), options);
  });

  py::class_<CompiledPlan>(m, "RenderPlan",
                           "A schedule compiled into the reads, sums and writes of "
                           "each processor call.")
      .def(py::pickle(
          [](const CompiledPlan& p) {
            return py::make_tuple(kPickleVersion, graph_state(p.graph), schedule_state(p.schedule));
          },
          [](const py::tuple& state) {
            check_pickled_state(state, 2, "RenderPlan");
            Graph graph       = graph_from_state(state[1].cast<py::tuple>());
            Schedule schedule = schedule_from_state(state[2].cast<py::tuple>());
            return compile_plan(std::move(graph), std::move(schedule));
          }))
      .def_property_readonly(
          "graph", [](const CompiledPlan& p) { return p.graph; },
          "A copy of the graph the plan was compiled from (editing it changes nothing the plan "
          "renders: compile the edited graph again).")
      .def_property_readonly("num_calls", &RenderPlan::n_calls,
                             "The number of processor calls a render makes.")
      .def_property_readonly("num_outputs", &RenderPlan::n_outputs,
                             "The number of `out` nodes: the outputs a render returns.")
      .def_readonly("num_sources", &RenderPlan::n_sources,
                    "The number of `in` nodes: the sources a render takes (K).")
      .def_readonly("dead_nodes", &RenderPlan::dead_nodes,
                    "Ids of the nodes on no path from an `in` to an `out` (not rendered).")
      .def_readonly("node_ids", &RenderPlan::node_ids,
                    "The graph's node id of each row of the plan's tensor form.")
      .def_property_readonly(
          "method", [](const CompiledPlan& p) { return to_string(p.method); },
          "The schedule method the plan was made with.")
      .def_readonly("proven_optimal", &RenderPlan::proven_optimal,
                    "Whether its schedule is proven to have the fewest calls.")
      .def_property_readonly(
          "type_sequence",
          [](const CompiledPlan& p) {
            std::vector<std::string> names;
            for (const PlanStep& step : p.steps) names.push_back(p.types.name(step.type));
            return names;
          },
          "The type name of each processor call, in order.")
      .def("to_json", &RenderPlan::to_json,
           "The plan as JSON text (its steps' reads, sums and writes).")
      .def("__str__", &RenderPlan::to_string)
      .def("__repr__", [](const CompiledPlan& p) {
        return "<grafx.RenderPlan: " + std::to_string(p.n_calls()) + " calls (" +
               to_string(p.method) + ")>";
      });
  def_scheduled(m, "compute_render_plan", [](Graph graph, const ScheduleOptions& options) {
    Schedule schedule = schedule_graph(to_tensor(graph), options);
    return compile_plan(std::move(graph), std::move(schedule));
  });
}

}  // namespace grafx::python
