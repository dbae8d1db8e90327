// The options of commands that build consoles (console_options.h): node types, chains, groups
// and routing.

#include "console_options.h"

#include "arguments.h"

#include <grafx/error.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>
#include <grafx/processors/registry.h>

#include <string>
#include <vector>

namespace grafx::cli {

NodeTypes known_node_types() { return registry_node_types(); }

std::string chain_letters(const std::vector<std::string>& chain) {
  std::string letters;
  for (const auto& type : chain) letters += type_letter(type);
  return letters;
}

Graph load_graph_file(const std::string& path) { return load_graph(path, known_node_types()); }

NodeTypes console_types(const std::string& types_file) {
  NodeTypes types = known_node_types();
  if (types_file.empty()) return types;
  const NodeTypes declared = load_graph_file(types_file).types();
  for (TypeId t = NodeTypes::kMix + 1; t < declared.size(); ++t) {
    try {
      types.add(declared[t]);
    } catch (const GraphError& e) {
      throw GraphError(e.code(), types_file + ": " + e.message());
    }
  }
  return types;
}

std::vector<int64_t> parse_groups(const std::string& text, int64_t n_tracks) {
  if (text.empty() || text == "0") return {};
  if (text.find(',') == std::string::npos) {
    try {
      size_t used = 0;
      int64_t n   = std::stoll(text, &used);
      if (used == text.size()) return ConsoleOptions::even_groups(n_tracks, n);
    } catch (const std::logic_error&) {
    }
    throw GraphError("grafx.graph.invalid_console",
                     "--groups: expected a number of subgroups or a comma-separated subgroup per "
                     "track, but got \"" +
                         text + "\"");
  }
  std::vector<int64_t> groups;
  for (const auto& item : split(text, ',')) {
    try {
      size_t used = 0;
      groups.push_back(std::stoll(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::logic_error&) {
      throw GraphError("grafx.graph.invalid_console",
                       "--groups: \"" + item + "\" is not a subgroup number");
    }
  }
  return groups;
}

void add_routing_options(CLI::App& command, RoutingArgs& routing) {
  command.add_option("--send", routing.sends,
                     "A send bus NAME=CHAIN[@TRACK,...] (CHAIN as --chain takes it): every track "
                     "(or those listed) sends to it, e.g. --send reverb=r --send "
                     "echo=eq,delay@vocals,guitar");
  command.add_option("--sidechain", routing.sidechains,
                     "TRACK=KEY[:TYPE]: TRACK's level follows KEY's input, e.g. --sidechain "
                     "bass=kick (a sidechain_compressor; TYPE is a letter or name)");
  command
      .add_option("--master", routing.master,
                  "Processor chain of the master bus, after the master mix (as --chain takes it; "
                  "C: a compressor with attack and release), or none")
      ->capture_default_str();
}

std::pair<CLI::Option*, CLI::Option*> add_chain_options(CLI::App& command, std::string& chain,
                                                        std::string& types_file) {
  CLI::Option* chain_option =
      command
          .add_option("--chain", chain,
                      "Processor chain of every track and subgroup: type letters (ecnsgdr) or "
                      "comma-separated type names or letters (e.g. strip,gain_pan,r)")
          ->capture_default_str();
  CLI::Option* types_option = command.add_option(
      "--types", types_file,
      "A graph file whose declared types (configured processors, containers) --chain may name");
  return {chain_option, types_option};
}

void parse_routing(const RoutingArgs& routing, const NodeTypes& types, ConsoleOptions& options) {
  auto fail = [](const std::string& option, const std::string& text, const std::string& what) {
    throw GraphError("grafx.graph.invalid_console", option + " \"" + text + "\": " + what);
  };
  for (const auto& text : routing.sends) {
    size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0)
      fail("--send", text, "expected NAME=CHAIN[@TRACK,...], e.g. reverb=r or echo=eq,delay");
    size_t at = text.find('@', equals);
    SendBus bus;
    bus.name = text.substr(0, equals);
    try {
      bus.chain = parse_chain(text.substr(equals + 1, at - equals - 1), types);
    } catch (const Error& e) {
      fail("--send", text, e.message());
    }
    if (at != std::string::npos)
      for (const auto& name : split(text.substr(at + 1), ','))
        bus.tracks.push_back(options.track_named(name, "--send \"" + text + "\""));
    options.sends.push_back(bus);
  }
  for (const auto& text : routing.sidechains) {
    size_t equals = text.find('='), colon = text.find(':', equals);
    if (equals == std::string::npos) fail("--sidechain", text, "expected TRACK=KEY[:TYPE]");
    std::string option = "--sidechain \"" + text + "\"";
    SidechainRoute route;
    route.track = options.track_named(text.substr(0, equals), option);
    route.key   = options.track_named(text.substr(equals + 1, colon - equals - 1), option);
    if (colon != std::string::npos) {
      try {
        route.type = parse_chain(text.substr(colon + 1), types).front();
      } catch (const Error& e) {
        fail("--sidechain", text, e.message());
      }
    }
    options.sidechains.push_back(route);
  }
  if (routing.master != "none") {
    try {
      options.master_chain = parse_chain(routing.master, types);
    } catch (const Error& e) {
      fail("--master", routing.master, e.message());
    }
  }
}

}  // namespace grafx::cli
