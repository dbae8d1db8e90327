// grafx export-lv2: a graph with its parameters as an LV2 plugin bundle (manifest.ttl,
// plugin.ttl, the stream program and the plugin library, apps/lv2), for audio hosts.

#include "arguments.h"
#include "commands.h"
#include "graph_source.h"
#include "output_folder.h"
#include "stop_request.h"

#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/processors/registry.h>
#include <grafx/render/make_stream.h>
#include <grafx/stream/plugin_ports.h>
#include <grafx/text.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

namespace grafx::cli {
namespace {

namespace fs = std::filesystem;

/// The plugin library export-lv2 copies into bundles: built and installed at lib/grafx/ beside
/// bin/ (CMakeLists.txt).
fs::path plugin_library() {
  std::error_code ec;
  const fs::path program = fs::read_symlink("/proc/self/exe", ec);
  const fs::path library = program.parent_path().parent_path() / "lib" / "grafx" / "grafx_lv2.so";
  if (ec || !fs::is_regular_file(library))
    throw IoError("grafx.lv2.library", "the plugin library " + library.string() +
                                           " is missing: build or install grafx with it");
  return library;
}

/// Removes the bundles half-written by exports that were killed (`prefix` + the pid of a
/// process that is gone) from `folder`: they are never a user's bundle (a bundle replaced by an
/// export is exchanged with the new one, then removed, under the same name).
void remove_stale_partials(const fs::path& folder, const std::string& prefix) {
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    char* rest     = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &rest, 10);
    if (pid > 0 && *rest == 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
}

/// Whether Turtle forbids `c` in an IRI (U+0000 to U+0020 and <>"{}|\^`): hosts built on lilv
/// cannot load a plugin whose URI holds one.
bool iri_forbidden(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u <= 0x20 || u == 0x7f || std::strchr("<>\"{}|\\^`", c) != nullptr;
}

/// `text` with its control characters shown as \xNN, for messages on one line.
std::string printable(const std::string& text) {
  std::string shown;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", u);
      shown += escaped;
    } else {
      shown += c;
    }
  }
  return shown;
}

/// An LV2 port symbol: letters, digits and underscores, not starting with a digit.
std::string symbol_of(const std::string& text) {
  std::string symbol;
  for (char c : text)
    symbol += std::isalnum(static_cast<unsigned char>(c)) ? char(std::tolower(c)) : '_';
  if (symbol.empty() || std::isdigit(static_cast<unsigned char>(symbol.front())))
    symbol = "_" + symbol;
  return symbol;
}

/// A Turtle string literal.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' || c == '\r' ? ' ' : c;  // a short Turtle string holds no line breaks
  }
  return out + "\"";
}

std::string number(double value) {
  std::string text = significant_digits(value, 9);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";  // a decimal, not an integer
  return text;
}

/// The LV2 unit of a physical unit, where LV2 has one.
std::string lv2_unit(const std::string& unit) {
  static const std::map<std::string, std::string> units = {
      {"dB", "units:db"}, {"ms", "units:ms"}, {"s", "units:s"}, {"Hz", "units:hz"}};
  auto found = units.find(unit);
  return found == units.end() ? "" : found->second;
}

/// A control's name as a mixing engineer reads it: its physical name without the unit the host
/// shows beside it ("threshold_db" → "threshold"), words for underscores, and for one of several
/// elements its name where the processor gives one ("gain_db[1]" → "gain right").
std::string control_label(const StreamParameter& parameter, const Processors& processors) {
  std::string name     = parameter.control.name, element;
  const size_t bracket = name.find('[');
  int64_t index        = -1;
  if (bracket != std::string::npos && name.back() == ']') {
    index = std::atoll(name.substr(bracket + 1).c_str());
    name  = name.substr(0, bracket);
  }
  auto processor = processors.find(parameter.type);
  if (index >= 0 && processor != processors.end())
    for (const ParameterSpec& spec : processor->second->parameter_specs())
      if (spec.physical_name == name && index < int64_t(spec.element_names.size()))
        element = spec.element_names[size_t(index)];
  if (index >= 0 && element.empty()) element = std::to_string(index + 1);
  std::string unit = parameter.control.unit;
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  const std::string suffix = "_" + unit;
  if (!unit.empty() && name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  std::replace(name.begin(), name.end(), '_', ' ');
  return element.empty() ? name : name + " " + element;
}

/// A file's URI (an IRI Turtle takes: every byte but unreserved ones and '/' percent-encoded).
std::string file_uri(const fs::path& path) {
  std::string uri = "file://";
  for (unsigned char c : fs::absolute(path).lexically_normal().string()) {
    if (std::isalnum(c) || std::strchr("-._~/", c)) {
      uri += char(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      uri += escaped;
    }
  }
  return uri;
}

/// plugin.ttl: the plugin and its ports, in the order the plugin connects them
/// (apps/lv2/grafx_lv2.cpp): each track's channels, the outputs' channels, a control per stream
/// parameter, the latency, the host's transport, the bypass (lv2:enabled). A track's or an
/// output's channels form a port group.
std::string plugin_ttl(const std::string& uri, const std::string& name, const GraphSource& source,
                       const Processors& processors, const Stream& stream) {
  std::ostringstream ports, groups;
  int64_t index = 0;
  std::set<std::string> symbols;
  auto unique = [&](std::string symbol) {
    const std::string base = symbol;
    for (int k = 2; symbols.count(symbol); ++k) symbol = base + "_" + std::to_string(k);
    symbols.insert(symbol);
    return symbol;
  };
  auto port = [&](const std::string& kind, const std::string& symbol, const std::string& label,
                  const std::string& extra) {
    ports << (index ? " , " : " ") << "[\n    a " << kind << " ;\n    lv2:index " << index
          << " ;\n    lv2:symbol " << quoted(unique(symbol)) << " ;\n    lv2:name " << quoted(label)
          << " ;\n"
          << extra << "  ]";
    ++index;
  };
  // A group of audio ports: stereo (left, right), mono or several channels, each channel an
  // element of the group with its designation, so that hosts tell left from right.
  auto audio = [&](bool input, const std::string& symbol, const std::string& label,
                   int64_t channels) {
    const std::string group = uri + "#" + symbol;
    const char* layout = channels == 1 ? ", pg:MonoGroup" : channels == 2 ? ", pg:StereoGroup" : "";
    std::ostringstream elements;
    for (int64_t c = 0; c < channels; ++c) {
      const std::string side        = channels == 1   ? ""
                                      : channels == 2 ? (c == 0 ? "left" : "right")
                                                      : std::to_string(c + 1);
      const std::string designation = channels == 1   ? "pg:center"
                                      : channels == 2 ? "pg:" + side
                                                      : "";
      if (!designation.empty())
        elements << (elements.tellp() > 0 ? " , " : "  pg:element ") << "[\n    lv2:index " << index
                 << " ;\n    lv2:designation " << designation << "\n  ]";
      port(input ? "lv2:AudioPort, lv2:InputPort" : "lv2:AudioPort, lv2:OutputPort",
           symbol + (side.empty() ? "" : "_" + side), label + (side.empty() ? "" : " " + side),
           "    pg:group <" + group + "> ;\n" +
               (designation.empty() ? "" : "    lv2:designation " + designation + " ;\n"));
    }
    groups << "\n<" << group << ">\n  a " << (input ? "pg:InputGroup" : "pg:OutputGroup") << layout
           << " ;\n  lv2:symbol " << quoted(symbol) << " ;\n  rdfs:label " << quoted(label)
           << (elements.tellp() > 0 ? " ;\n" + elements.str() : std::string()) << " .\n";
  };
  int64_t track = 0;
  for (NodeId id : source.graph.nodes_of_type("in")) {
    std::string label = size_t(track) < source.track_names.size()
                            ? source.track_names[size_t(track)]
                            : source.graph.node(id).name;
    if (label.empty()) label = "track " + std::to_string(track + 1);
    audio(true, "in_" + std::to_string(++track), label, stream.source_channels());
  }
  for (int64_t o = 0; o < stream.n_outputs(); ++o)
    audio(false, stream.n_outputs() > 1 ? "out_" + std::to_string(o + 1) : "out",
          stream.n_outputs() > 1 ? "output " + std::to_string(o + 1) : "mix",
          stream.output_channels());
  for (const StreamParameter& p : stream.parameters()) {
    std::string node = p.node_name.empty() ? p.type + " " + std::to_string(p.node) : p.node_name;
    for (char& c : node)  // "track0.noise_gate": "track0 noise gate"
      if (c == '.' || c == '_') c = ' ';
    const StreamControl& c  = p.control;
    const std::string label = control_label(p, processors);
    std::string extra       = "    lv2:default " + number(c.value) + " ;\n    lv2:minimum " +
                        number(c.minimum) + " ;\n    lv2:maximum " + number(c.maximum) + " ;\n";
    if (!lv2_unit(c.unit).empty()) extra += "    units:unit " + lv2_unit(c.unit) + " ;\n";
    if (c.unit == "ms" && c.minimum > 0)  // times span decades: a logarithmic knob
      extra += "    lv2:portProperty pprops:logarithmic ;\n";
    if (!c.description.empty()) extra += "    rdfs:comment " + quoted(c.description) + " ;\n";
    port("lv2:ControlPort, lv2:InputPort", symbol_of(node + " " + label), node + ": " + label,
         extra);
  }
  port("lv2:ControlPort, lv2:OutputPort", "latency", "Latency",
       "    lv2:designation lv2:latency ;\n    lv2:portProperty lv2:reportsLatency, "
       "lv2:integer ;\n    units:unit units:frame ;\n");
  port("atom:AtomPort, lv2:InputPort", "transport", "Transport",
       "    atom:bufferType atom:Sequence ;\n    atom:supports time:Position ;\n"
       "    lv2:designation lv2:control ;\n    lv2:portProperty lv2:connectionOptional ;\n"
       "    rdfs:comment \"The host's transport position, which automation curves follow\" ;\n");
  port("lv2:ControlPort, lv2:InputPort", "enabled", "Enabled",
       "    lv2:designation lv2:enabled ;\n    lv2:default 1 ;\n    lv2:minimum 0 ;\n"
       "    lv2:maximum 1 ;\n    lv2:portProperty lv2:toggled, lv2:integer ;\n"
       "    rdfs:comment \"Off: the tracks' sum, delayed by the latency (a bypass that keeps the "
       "timing)\" ;\n");

  const PluginPorts layout(stream);
  if (index != layout.size())  // the layout written here is the one the plugin connects
    throw Error("grafx.internal", "plugin.ttl declares " + std::to_string(index) +
                                      " ports where the plugin connects " +
                                      std::to_string(layout.size()));
  // Where the graph comes from a fit, its report is the plugin's page: what it was fitted to and
  // every setting it found.
  const fs::path report = fs::path(source.graph_path).parent_path() / "report.html";
  std::error_code ec;
  const std::string homepage = source.folder && fs::is_regular_file(report, ec)
                                   ? "  doap:homepage <" + file_uri(report) + "> ;\n"
                                   : std::string();
  std::ostringstream ttl;
  ttl << layout.signature_line() << "\n"
      << "@prefix atom: <http://lv2plug.in/ns/ext/atom#> .\n"
         "@prefix doap: <http://usefulinc.com/ns/doap#> .\n"
         "@prefix foaf: <http://xmlns.com/foaf/0.1/> .\n"
         "@prefix lv2: <http://lv2plug.in/ns/lv2core#> .\n"
         "@prefix bufsz: <http://lv2plug.in/ns/ext/buf-size#> .\n"
         "@prefix opts: <http://lv2plug.in/ns/ext/options#> .\n"
         "@prefix urid: <http://lv2plug.in/ns/ext/urid#> .\n"
         "@prefix pg: <http://lv2plug.in/ns/ext/port-groups#> .\n"
         "@prefix pprops: <http://lv2plug.in/ns/ext/port-props#> .\n"
         "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
         "@prefix time: <http://lv2plug.in/ns/ext/time#> .\n"
         "@prefix units: <http://lv2plug.in/ns/extensions/units#> .\n\n"
      << "<" << uri << ">\n"
      << "  a lv2:Plugin, lv2:MixerPlugin ;\n"
      << "  doap:name " << quoted(name) << " ;\n"
      << "  lv2:project <" << uri << "#project> ;\n"
      << "  rdfs:comment "
      << quoted(
             "Exported by grafx export-lv2: a graph of processors (a fitted mixing console, "
             "say), with a control for each setting a mixer turns")
      << " ;\n"
      << "  lv2:optionalFeature lv2:hardRTCapable, opts:options, urid:map ;\n"
      << "  opts:supportedOption bufsz:nominalBlockLength, bufsz:maxBlockLength ;\n"
      << "  pg:mainOutput <" << uri << "#" << (stream.n_outputs() > 1 ? "out_1" : "out") << "> ;\n"
      << "  lv2:port" << ports.str() << " .\n"
      << groups.str()
      // Who made it, and its page, as hosts show a plugin's maker (from its project).
      << "\n<" << uri << "#project>\n  a doap:Project ;\n  doap:name \"grafx\" ;\n"
      << homepage
      << "  doap:maintainer [\n    a foaf:Person ;\n    foaf:name \"grafx export-lv2\"\n  ] .\n";
  return ttl.str();
}

/// Blocks silenced for outputs that are not finite when `stream` plays a quarter of a second of
/// full-scale noise on every track channel.
int64_t silenced_blocks_of_loud_tracks(Stream& stream) {
  const int64_t block  = stream.max_block(),
                length = std::max<int64_t>(block, stream.sample_rate() / 4);
  const int64_t inputs = stream.n_sources() * stream.source_channels();
  std::vector<std::vector<float>> in(static_cast<size_t>(inputs),
                                     std::vector<float>(static_cast<size_t>(block)));
  std::vector<std::vector<float>> out(
      static_cast<size_t>(stream.n_outputs() * stream.output_channels()),
      std::vector<float>(static_cast<size_t>(block)));
  std::vector<const float*> in_pointers;
  std::vector<float*> out_pointers;
  for (auto& channel : in) in_pointers.push_back(channel.data());
  for (auto& channel : out) out_pointers.push_back(channel.data());
  uint32_t state = 1;
  for (int64_t done = 0; done < length; done += block) {
    for (auto& channel : in)
      for (float& x : channel) {
        state = state * 1664525u + 1013904223u;  // a full-scale noise, the same every export
        x     = float(int32_t(state)) / 2147483648.0f;
      }
    stream.process(in_pointers.data(), out_pointers.data(), block);
  }
  return stream.status().silenced_blocks;
}

}  // namespace

void add_export_lv2_command(CLI::App& app) {
  struct Args {
    GraphSourceOptions what;
    std::string output, uri, name;
    int64_t channels = 2, sample_rate = 0;
    bool force = false;
  };
  auto args     = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "export-lv2", "Export a fitted graph as an LV2 plugin bundle for audio hosts");
  add_graph_source_options(*cmd, args->what);
  cmd->add_option("--channels", args->channels, "Channels of every track's input (1: mono)")
      ->capture_default_str()
      ->check(CLI::Range(1, 8));
  cmd->add_option("--sample-rate", args->sample_rate,
                  "The rate the parameters were made for, where their file records none (the "
                  "stream runs at it; hosts at other rates convert to it and back)")
      ->check(CLI::Range(int64_t(1000), int64_t(768000)));
  cmd->add_option("--uri", args->uri, "The plugin's URI (default: urn:grafx:NAME)");
  cmd->add_option("--name", args->name, "The plugin's name in hosts (default: the bundle's)");
  cmd->add_option("-o,--output", args->output, "The bundle to write, a folder NAME.lv2")
      ->required();
  add_force_flag(*cmd, args->force);
  cmd->callback([args] {
    StopRequest stop;  // Ctrl-C and SIGTERM end it before the bundle is written, writing nothing
    const fs::path bundle  = fs::path(args->output).lexically_normal();
    const std::string stem = bundle.filename().stem().string();
    if (bundle.extension() != ".lv2" || stem.empty())
      throw IoError("grafx.lv2.bundle", args->output + ": expected a bundle folder NAME.lv2");
    // Hosts find a bundle by a file URI of its folder, which lilv escapes but for control
    // characters (a tab): a bundle of such a name loads in none.
    if (std::any_of(stem.begin(), stem.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
      throw IoError("grafx.lv2.bundle",
                    printable(args->output) + ": a bundle's name holds no control characters");
    std::error_code ec;
    if (fs::exists(bundle, ec)) {
      if (!args->force)
        throw IoError("grafx.io.exists", args->output +
                                             ": exists already; refusing to replace it (use "
                                             "--force to replace an LV2 bundle)");
      if (!fs::is_regular_file(bundle / "manifest.ttl"))
        throw IoError("grafx.lv2.bundle",
                      args->output +
                          ": exists and is not an LV2 bundle (no manifest.ttl); not "
                          "replaced, even with --force");
    }
    const fs::path parent = bundle.has_parent_path() ? bundle.parent_path() : fs::path(".");
    if (!fs::is_directory(parent, ec))
      throw IoError("grafx.io.unwritable", args->output + ": its folder does not exist");
    const fs::path library = plugin_library();
    const GraphSource source(args->what);
    std::vector<std::string> inputs = source.inputs();
    inputs.push_back(args->what.source);  // a fit folder, with all it holds
    inputs.push_back(library.string());
    check_no_input_inside(bundle.string(), inputs);
    const SampleRate recorded = source.file.sample_rate;
    if (recorded > 0 && args->sample_rate > 0 && args->sample_rate != recorded)
      throw RenderError(
          "grafx.lv2.sample_rate",
          "the parameters were made for " + std::to_string(recorded) + " Hz, not --sample-rate " +
              std::to_string(args->sample_rate) +
              " (their time constants are in samples); leave it out: hosts at any rate convert to "
              "theirs");
    const SampleRate sample_rate = recorded > 0 ? recorded : args->sample_rate;
    if (sample_rate <= 0)
      throw RenderError("grafx.lv2.sample_rate",
                        "the parameters record no sample rate: give --sample-rate");
    const Processors processors = source.processors(sample_rate);
    // Blocks of a common host's; the plugin makes its stream again for the host's own
    // (grafx_lv2.cpp), so these only size what the export itself holds.
    const Stream stream = make_stream(source.graph, processors, source.parameters(processors),
                                      {sample_rate, 512, args->channels});
    // The program loaded as a host will load it: one the plugin would refuse (a parameter whose
    // form overflows a float, such as a knee of exp(100)) is refused here, before any file.
    const std::string program = stream.save();
    std::optional<Stream> loaded;
    try {
      loaded.emplace(Stream::load(program));
    } catch (const Error& e) {
      throw RenderError(
          "grafx.lv2.program",
          "the parameters make a program that the plugin could not load (" + e.message() + ")");
    }
    // And one that would play silence: outputs that are not finite for loud tracks (gains in
    // series that overflow a float), which a stream silences block after block.
    if (const int64_t silenced = silenced_blocks_of_loud_tracks(*loaded); silenced > 0)
      throw RenderError("grafx.lv2.program",
                        "the parameters make a stream whose output is not finite for full-scale "
                        "tracks (" +
                            std::to_string(silenced) +
                            " of its blocks were: a gain that overflows, say), which the plugin "
                            "would play as silence");
    const std::string uri  = args->uri.empty() ? "urn:grafx:" + symbol_of(stem) : args->uri;
    const std::string name = args->name.empty() ? stem : args->name;
    if (std::any_of(uri.begin(), uri.end(), [](char c) { return iri_forbidden(c); }) ||
        uri.find(':') == std::string::npos)
      throw RenderError("grafx.lv2.uri",
                        "--uri: expected an absolute URI without control "
                        "characters, spaces or any of <>\"{}|\\^` (Turtle's "
                        "IRIs hold none), but got \"" +
                            printable(args->uri) + "\"");

    // Written beside the bundle, then renamed into place (an existing bundle exchanged with it
    // in one step): a bundle is replaced whole or not at all.
    const std::string hidden = "." + bundle.filename().string() + ".partial";
    remove_stale_partials(parent, hidden);
    const fs::path partial = parent / (hidden + std::to_string(::getpid()));
    auto stopped           = [&] {
      if (stop.requested())
        throw IoError("grafx.lv2.interrupted",
                                args->output + ": interrupted before the bundle was written; nothing was");
    };
    try {
      stopped();
      fs::remove_all(partial);
      fs::create_directory(partial);
      write_text_file((partial / "plugin.uri").string(), uri + "\n", false);
      write_text_file((partial / "stream.program").string(), program, false);
      write_text_file((partial / "manifest.ttl").string(),
                      "@prefix lv2: <http://lv2plug.in/ns/lv2core#> .\n"
                      "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\n<" +
                          uri +
                          ">\n  a lv2:Plugin ;\n  lv2:binary <grafx_lv2.so> ;\n"
                          "  rdfs:seeAlso <plugin.ttl> .\n",
                      false);
      write_text_file((partial / "plugin.ttl").string(),
                      plugin_ttl(uri, name, source, processors, stream), false);
      fs::copy_file(library, partial / "grafx_lv2.so");
      stopped();
      if (!fs::exists(bundle)) {
        fs::rename(partial, bundle);
      } else if (::renameat2(AT_FDCWD, partial.c_str(), AT_FDCWD, bundle.c_str(),
                             RENAME_EXCHANGE) != 0) {
        // A file system without exchanges: the old bundle steps aside under a name that a
        // later export never removes, until the new one is in place.
        const fs::path aside = partial.string() + "-replaced";
        fs::rename(bundle, aside);
        fs::rename(partial, bundle);
        fs::remove_all(aside);
      }
      fs::remove_all(partial, ec);  // the bundle it replaced, where exchanged
    } catch (const fs::filesystem_error& e) {
      fs::remove_all(partial, ec);
      throw IoError("grafx.io.unwritable", args->output + ": " + e.code().message());
    } catch (...) {
      fs::remove_all(partial, ec);
      throw;
    }
    const int64_t n_controls = int64_t(stream.parameters().size());
    std::cout << "exported " << source.graph_path << " as " << uri << " (" << sample_rate << " Hz, "
              << stream.n_sources() << " tracks of " << stream.source_channels() << " ch, "
              << n_controls << " controls, latency " << stream.latency_samples() << " samples) -> "
              << bundle.string() << "\n";
  });
}

}  // namespace grafx::cli
