#pragma once
// Subcommands of the grafx program. Each add_*_command registers one subcommand whose callback
// does the work; errors propagate as grafx::Error and are reported by main().

#include <grafx/fit/fit_record.h>
#include <grafx/fit/prune.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph.h>
#include <grafx/processors/registry.h>

#include <ATen/Tensor.h>
#include <CLI/CLI.hpp>

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace grafx::cli {

void add_console_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_draw_command(CLI::App& app);
void add_schedule_command(CLI::App& app);
void add_render_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_processors_command(CLI::App& app);
void add_process_command(CLI::App& app);
void add_prune_command(CLI::App& app);
void add_loss_command(CLI::App& app);
void add_bench_command(CLI::App& app);

/// Prints the notes of trim_to_shortest (grafx/fit/fit_record.h) as "grafx: note: ..." lines.
void print_notes(const std::vector<std::string>& notes);
/// Makes a command's output folder, or checks that an existing one may be used: with `resume`
/// as it is (FitError [grafx.fit.checkpoint] if it does not exist); with `force` the files of
/// `files` an earlier run wrote there (only those) are removed first, so that an interrupted
/// run never leaves a folder mixing two runs; otherwise holding any of them is refused
/// (IoError [grafx.io.exists], naming `what`, e.g. "fit"). Call it once everything else has
/// been checked: it is the first thing to write. The folder stays locked until the process ends:
/// another command preparing it meanwhile gets IoError [grafx.io.locked].
void prepare_output_folder(const std::string& folder, const std::vector<std::string>& files,
                           bool resume, bool force, const std::string& what);
/// prepare_output_folder's refusals alone (a locked folder too), writing nothing: for commands
/// that work long before their first write.
void check_output_folder(const std::string& folder, const std::vector<std::string>& files,
                         bool resume, bool force, const std::string& what);
/// Makes `folder` inside a prepared output folder (if it does not exist yet); on failure it
/// goes again as prepare_output_folder's (`files` if it existed).
void make_output_subfolder(const std::string& folder, const std::vector<std::string>& files);
/// A file the command wrote, one of several: removed if a later one fails.
void note_written(const std::string& file);
/// The outputs of a prepared folder are complete: a later failure leaves them.
void keep_outputs(const std::string& folder);
/// A failed command leaves nothing it made: removes the folders prepared (or made) since the
/// process began and not kept, or, in folders that existed, the listed files, and the files
/// noted as written. Called as the
/// command ends in `error`; an interrupted fit or pruning ([grafx.fit.interrupted]) keeps its
/// folder for --resume, as does a --resume run the earlier run's.
void remove_unfinished_outputs(const std::exception_ptr& error);
/// Adds the pruning options (--PREFIXmethod, --PREFIXtolerance, ...) to a subcommand.
void add_pruning_options(CLI::App& command, PruningOptions& options, const std::string& prefix);
/// Where and how a pruning run writes.
struct PruningSession {
  std::string folder;       ///< must exist; outputs are replaced
  std::string title;        ///< of the report
  bool resume     = false;  ///< continue from the state saved in the folder
  bool keep_state = false;  ///< save the state after every round (for --resume)
};
/// Prunes with live progress and writes the outputs (report/prune_report.h) into the folder.
void run_pruning(Fitter& fitter, const PruningOptions& options, const PruningSession& session);

/// Whether the user chose the thread count (--threads or GRAFX_THREADS); otherwise fits adapt
/// it to the machine's load (FitOptions::adapt_threads).
bool threads_chosen();

/// Node types a graph file may use without declaring them.
NodeTypes known_node_types();
/// The letters of the default console chain ("ecnsgdr").
std::string default_chain_letters();
/// Loads a graph file with the known node types.
Graph load_graph_file(const std::string& path);
/// The types a console may be built of: the registry's, plus the types the graph file
/// `types_file` declares (configured processors, containers), when given.
NodeTypes console_types(const std::string& types_file);
/// --chain and --types of the commands that build consoles; returns both options.
std::pair<CLI::Option*, CLI::Option*> add_chain_options(CLI::App& command, std::string& chain,
                                                        std::string& types_file);
/// Subgroups from "--groups": a count (tracks split evenly), or a subgroup per track ("0,0,1");
/// empty or "0" for none.
std::vector<int64_t> parse_groups(const std::string& text, int64_t n_tracks);
/// Adds "--send" and "--sidechain" (console routing) to a subcommand.
void add_routing_options(CLI::App& command, std::vector<std::string>& sends,
                         std::vector<std::string>& sidechains);
/// Adds the send buses ("NAME=CHAIN[@TRACK,...]", CHAIN as parse_chain reads it) and sidechains
/// ("TRACK=KEY[:TYPE]", TYPE a letter or name) to a console's options; types of `types`,
/// tracks by name (options.track_names, else "track<i>"). Throws GraphError
/// [grafx.graph.invalid_console] naming the option.
void parse_routing(const std::vector<std::string>& sends,
                   const std::vector<std::string>& sidechains, const NodeTypes& types,
                   ConsoleOptions& options);
/// Fills a parameter's values `[1, shape...]` from text: one list of comma-separated finite
/// numbers spread along the last dimension (one number fills it; as many as it has are taken
/// as they are; fewer are interpolated linearly; more are refused), or one such list per row of
/// the leading dimensions, separated by ';'. Throws through `fail` with the reason.
void fill_values(at::Tensor& values, const std::string& text,
                 const std::function<void(const std::string&)>& fail);
/// A parameter moving through values at times (`--set NAME=V@T,V@T,...`): the times in
/// seconds (ascending) and the raw values at them, [K, 1, shape...] (float64).
struct Breakpoints {
  std::vector<double> seconds;
  at::Tensor raw;
};
/// Raw parameters [1, shape...] (float64) of one node of `processor` from "NAME=VALUES"
/// assignments (see fill_values), mapped by the library (grafx/processors/parameter_values.h):
/// NAME is a physical name (values in its unit, checked against its range), a raw name (raw
/// values) or, where `wet` is given, "wet" (the node's dry/wet amount, whose raw value goes to
/// *wet, left as it is when unset). Unset parameters keep their initial values; a name given
/// twice takes its last value; a parameter given by both names is refused. Where `curves` is
/// given, "NAME=V@T,V@T,..." (each V values as above with ':' between elements, each T seconds,
/// ascending) automates an automatable parameter: its breakpoints go to (*curves)[raw name].
/// `option` names the command-line option in errors.
TensorDict parameters_from_assignments(const Processor& processor,
                                       const std::vector<std::string>& assignments, at::Tensor* wet,
                                       const std::string& option,
                                       std::map<std::string, Breakpoints>* curves = nullptr);
/// Processor options from "NAME=VALUE" assignments (`option` names the command-line option in
/// errors): true/false for flags, a number, a choice's name, or comma-separated type names for a
/// container's members. Checked when the processor is made (make_configured).
ProcessorOptions parse_options(const ProcessorDescriptor& descriptor,
                               const std::vector<std::string>& assignments,
                               const std::string& option);
/// The processor `descriptor` makes with these options; errors name `option`.
std::unique_ptr<Processor> make_configured(const ProcessorDescriptor& descriptor,
                                           ProcessorConfig config, const std::string& option);
/// "a, b, c".
std::string join(const std::vector<std::string>& items);
/// "1 subgroup", "3 subgroups"; `plural` where adding "s" is wrong ("send buses").
std::string counted(int64_t n, const std::string& singular, const std::string& plural = "");
/// The items between separators ("a,,b" has three; "" has one, empty).
std::vector<std::string> split(const std::string& text, char separator);
/// A finite number above `min` (or at least `min` when `inclusive`), with a message saying so:
/// refuses NaN and infinity, which CLI11's range checks let through or report as huge ranges.
/// The number `text` spells out entirely, if it is a finite one.
std::optional<double> parse_finite(const std::string& text);
CLI::Validator finite_number(double min, bool inclusive);
/// A whole number of at least `min`, with a message saying so (CLI11 would take "-1" for an
/// unsigned option and wrap it around).
CLI::Validator whole_number(int64_t min);
/// One option per fit setting (grafx/fit/fit_settings.h) that sets it in `options`:
/// --name-with-dashes and its aliases, grouped in --help, with the current value of `options` as
/// the default shown. Returns the options by setting name.
std::map<std::string, CLI::Option*> add_fit_settings(CLI::App& cmd, FitOptions& options);
/// Ctrl-C and SIGTERM (a scheduler, `kill`) taken as a request to stop after the current step,
/// while an instance lives; the previous handlers come back when it goes.
class StopRequest {
 public:
  StopRequest();
  ~StopRequest();
  StopRequest(const StopRequest&)            = delete;
  StopRequest& operator=(const StopRequest&) = delete;
  bool requested() const;

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
};

/// Adds the usual "--force" flag (replace existing outputs) to a subcommand.
CLI::Option* add_force_flag(CLI::App& command, bool& force);

}  // namespace grafx::cli
