// Bindings of the graph, schedule and plan layers: Graph, consoles, the tensor form, schedules
// and render plans.

#include "bindings.h"

#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/io/draw.h>
#include <grafx/plan/render_plan.h>

#include <optional>

namespace grafx::python {

namespace {

py::dict node_to_python(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  py::dict result;
  result["id"]       = node.id;
  result["type"]     = graph.types().name(node.type);
  result["name"]     = node.name;
  result["dry_wet"]  = node.dry_wet;
  result["bypassed"] = node.bypassed;
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
          py::arg("processor") = "", py::arg("options") = py::dict())
      .def_property_readonly("types",
                             [](const Graph& g) {
                               py::list result;
                               for (const NodeType& type : g.types().all())
                                 result.append(type_to_python(type));
                               return result;
                             })
      .def("add", &Graph::add, py::arg("node_type"), py::arg("name") = "")
      .def("add_serial_chain", &Graph::add_serial_chain, py::arg("node_types"),
           py::arg("names") = std::vector<std::string>{})
      .def("connect", &Graph::connect, py::arg("source"), py::arg("dest"),
           py::arg("outlet") = "main", py::arg("inlet") = "main")
      .def("disconnect", &Graph::disconnect, py::arg("source"), py::arg("dest"),
           py::arg("outlet") = "main", py::arg("inlet") = "main")
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
      .def("bypass", &Graph::bypass, py::arg("node"))
      .def("set_name", &Graph::set_name, py::arg("node"), py::arg("name"))
      .def("set_dry_wet", &Graph::set_dry_wet, py::arg("node"), py::arg("dry_wet") = true)
      .def("set_bypassed", &Graph::set_bypassed, py::arg("node"), py::arg("bypassed") = true)
      .def("node", &node_to_python, py::arg("node"))
      .def("nodes", &Graph::nodes)
      .def("nodes_of_type", &Graph::nodes_of_type, py::arg("node_type"))
      .def("edges", [](const Graph& g) { return edges_to_python(g, g.edges()); })
      .def("in_edges", [](const Graph& g, NodeId id) { return edges_to_python(g, g.in_edges(id)); })
      .def("out_edges",
           [](const Graph& g, NodeId id) { return edges_to_python(g, g.out_edges(id)); })
      .def("predecessors", &Graph::predecessors)
      .def("successors", &Graph::successors)
      .def("topological_order", &Graph::topological_order)
      .def("__contains__", &Graph::contains)
      .def("__len__", &Graph::n_nodes)
      .def_property_readonly("num_nodes", &Graph::n_nodes)
      .def_property_readonly("num_edges", &Graph::n_edges)
      .def_property_readonly("counter", &Graph::next_id, "The id the next add returns.")
      .def("validate",
           [](const Graph& g) {
             py::list result;
             for (const ValidationIssue& issue : g.validate())
               result.append(py::make_tuple(issue.code, issue.node, issue.message));
             return result;
           })
      .def("check", &Graph::check)
      .def("to_json", &graph_to_json)
      .def_static(
          "from_json",
          [](const std::string& text, const std::string& origin) {
            return graph_from_json(text, origin, registry_node_types());
          },
          py::arg("text"), py::arg("origin") = "graph")
      .def_static(
          "load", [](const std::string& path) { return load_graph(path, registry_node_types()); },
          py::arg("path"))
      .def("save", &save_graph, py::arg("path"), py::arg("overwrite") = false)
      .def(
          "to_dot",
          [](const Graph& g, bool vertical, bool show_ids, bool strips, const std::string& title) {
            return graph_to_dot(g, {vertical, show_ids, title, strips});
          },
          py::arg("vertical") = false, py::arg("show_ids") = false, py::arg("strips") = false,
          py::arg("title") = "")
      .def(
          "draw",
          [](const Graph& g, const std::string& path, bool vertical, bool show_ids, bool strips,
             const std::string& title, bool overwrite) {
            draw_graph(g, path, {vertical, show_ids, title, strips}, overwrite);
          },
          py::arg("path"), py::arg("vertical") = false, py::arg("show_ids") = false,
          py::arg("strips") = false, py::arg("title") = "", py::arg("overwrite") = false)
      .def(py::pickle(&graph_state, &graph_from_state))
      .def("copy", [](const Graph& g) { return Graph(g); })
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
         const std::vector<std::string>& track_names, const Graph* types) {
        ConsoleOptions options;
        options.n_tracks     = n_tracks;
        options.track_groups = track_groups;
        options.chain        = chain;
        options.dry_wet      = dry_wet;
        options.track_names  = track_names;
        return build_console(options, types ? types->types() : registry_node_types()).graph;
      },
      py::arg("n_tracks"), py::arg("track_groups"), py::arg("chain"), py::arg("dry_wet"),
      py::arg("track_names"), py::arg("types"));
  m.def("chain_from_letters", &chain_from_letters, py::arg("letters"));
  m.def("default_console_chain", &default_console_chain);
  m.def("even_groups", &ConsoleOptions::even_groups, py::arg("n_tracks"), py::arg("n_groups"));
  m.def(
      "prune_randomly",
      [](Graph& graph, uint64_t seed) {
        return prune_randomly(graph, {seed, random_pruning_rates()});
      },
      py::arg("graph"), py::arg("seed") = 0);

  py::class_<GraphTensor>(m, "GraphTensor", "The tensor form of a graph (graph neural networks).")
      .def_readonly("node_types", &GraphTensor::node_types)
      .def_readonly("edge_index", &GraphTensor::edge_index)
      .def_readonly("edge_ports", &GraphTensor::edge_ports)
      .def_readonly("type_counts", &GraphTensor::type_counts)
      .def_readonly("node_ids", &GraphTensor::node_ids)
      .def_readonly("node_names", &GraphTensor::node_names)
      .def_property_readonly("type_names",
                             [](const GraphTensor& t) {
                               std::vector<std::string> names;
                               for (const NodeType& type : t.types.all())
                                 names.push_back(type.name);
                               return names;
                             })
      .def_property_readonly("num_nodes", &GraphTensor::n_nodes)
      .def_property_readonly("num_edges", &GraphTensor::n_edges)
      .def("to_graph", &to_graph)
      .def("__repr__", &GraphTensor::to_string);
  m.def("to_tensor", &to_tensor, py::arg("graph"));

  py::class_<Schedule>(m, "Schedule")
      .def(py::pickle(&schedule_state, &schedule_from_state))
      .def_property_readonly("steps", [](const Schedule& s) { return steps_to_python(s.steps); })
      .def_readonly("step_types", &Schedule::step_types)
      .def_readonly("dead_rows", &Schedule::dead_rows)
      .def_property_readonly("method", [](const Schedule& s) { return to_string(s.method); })
      .def_readonly("proven_optimal", &Schedule::proven_optimal)
      .def_readonly("lower_bound", &Schedule::lower_bound)
      .def_readonly("seconds", &Schedule::seconds)
      .def_property_readonly("num_calls", &Schedule::n_calls)
      .def("step_of_rows", &Schedule::step_of_rows, py::arg("num_rows"))
      .def("type_sequence",
           [](const Schedule& s, const GraphTensor& t) { return s.type_sequence(t.types); });
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
      .def_readonly("graph", &CompiledPlan::graph, "The graph the plan was compiled from.")
      .def_property_readonly("num_calls", &RenderPlan::n_calls)
      .def_property_readonly("num_outputs", &RenderPlan::n_outputs)
      .def_readonly("num_sources", &RenderPlan::n_sources)
      .def_readonly("dead_nodes", &RenderPlan::dead_nodes)
      .def_readonly("node_ids", &RenderPlan::node_ids)
      .def_property_readonly("method", [](const CompiledPlan& p) { return to_string(p.method); })
      .def_readonly("proven_optimal", &RenderPlan::proven_optimal)
      .def_property_readonly("type_sequence",
                             [](const CompiledPlan& p) {
                               std::vector<std::string> names;
                               for (const PlanStep& step : p.steps)
                                 names.push_back(p.types.name(step.type));
                               return names;
                             })
      .def("to_json", &RenderPlan::to_json)
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
