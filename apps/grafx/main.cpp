// grafx: the command-line program. Thin subcommands over the library (see commands.h).

#include "arguments.h"
#include "commands.h"
#include "console_options.h"
#include "output_folder.h"
#include "progress_file.h"

#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>
#include <grafx/processors/registry.h>
#include <grafx/program.h>
#include <grafx/text.h>

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <new>
#include <sstream>
#include <thread>

namespace {

// The library refuses to replace files without knowing the flag that allows it here.
std::string with_force_hint(const grafx::Error& e) {
  return e.code() == "grafx.io.exists" && e.message().find("--force") == std::string::npos &&
                 e.message().find("refusing to overwrite") != std::string::npos
             ? " (--force replaces it)"
             : "";
}

// The first word that is neither an option nor an option's value must name a command: CLI11
// would otherwise report an unknown one as a missing command ("A subcommand is required").
// --version goes before it: after a command it would end the program with success having done
// none of the command's work (a script would take the command as done).
void check_command(const CLI::App& app, int argc, char** argv) {
  bool after_command = false;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;  // the rest are values
    if (after_command) {
      if (word == "--version")
        throw CLI::ParseError(
            "--version is an option of grafx itself, not of its commands: "
            "grafx --version",
            CLI::ExitCodes::InvalidError);
      continue;
    }
    if (word.rfind("-", 0) == 0) {
      const CLI::Option* option = app.get_option_no_throw(word.substr(0, word.find('=')));
      if (option && option->get_type_size() > 0 && word.find('=') == std::string::npos) ++i;
      continue;
    }
    std::vector<std::string> names;
    bool known = false;
    for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
      known = known || command->check_name(word);
      names.push_back(command->get_name());
    }
    if (known) {
      after_command = true;
      continue;
    }
    throw CLI::ParseError(
        "unknown command \"" + word + "\"; the commands are " + grafx::join(names),
        CLI::ExitCodes::InvalidError);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f, a quota) makes a write fail with an error, as a full disk does,
  // instead of killing the program with its work half-written.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"grafx: differentiable audio processing graphs"};
  app.require_subcommand(1);
  app.fallthrough();  // the program's options (--threads, ...) also after the command
  app.set_version_flag("--version", "grafx " GRAFX_VERSION);
  // LibTorch defaults to one thread on these machines: use every core unless told otherwise.
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CLI::Option* threads_option =
      app.add_option(
             "--threads", threads,
             "CPU threads for LibTorch, before or after the command (default: all cores, "
             "or $GRAFX_THREADS; more than 4 per core are capped, with a note; fits then use "
             "fewer while that steps faster on a busy machine)")
          ->check(CLI::Range(1, 1024));
  double max_input_mb = double(grafx::input_limit() >> 20);
  // Up to 2^40 MiB (1 EiB): the limit is kept in bytes, and 2^64 bytes is 2^44 MiB.
  constexpr double kMostInputMb = 1099511627776.0;
  app.add_option("--max-input-mb", max_input_mb,
                 "Largest input read whole (graph, parameter and audio files), in MiB")
      ->capture_default_str()
      ->check(grafx::cli::finite_number(0, false))
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            std::optional<double> value = grafx::cli::parse_finite(text);
            if (!value || *value <= kMostInputMb) return "";  // finite_number says the rest
            return "expected at most 1099511627776 MiB (1 EiB), but got \"" + text + "\"";
          },
          "at most 1099511627776"));
  std::string progress_json;
  app.add_option("--progress-json", progress_json,
                 "Also write the progress as JSON to this file, replaced as it changes (for "
                 "programs that watch a fit or a pruning run; its folder must exist)")
      ->check(CLI::Validator(
          [](std::string& path) -> std::string {
            return path.empty() ? "expected a file name, but got an empty one" : "";
          },
          "FILE"));
  app.parse_complete_callback([&threads, &max_input_mb, &progress_json, threads_option] {
    // More threads than the machine runs at once only slow LibTorch down: capped, with a note.
    std::string note;
    threads = grafx::capped_threads(threads, &note);
    if (!note.empty()) std::cerr << "grafx: note: " << note << "\n";
    at::set_num_threads(threads);
    if (threads_option->count() > 0) grafx::cli::note_threads_chosen();
    grafx::set_input_limit(uint64_t(max_input_mb * 1048576.0));
    grafx::cli::set_progress_file(progress_json);
  });
  grafx::cli::add_console_command(app);
  grafx::cli::add_info_command(app);
  grafx::cli::add_draw_command(app);
  grafx::cli::add_schedule_command(app);
  grafx::cli::add_render_command(app);
  grafx::cli::add_stream_command(app);
  grafx::cli::add_export_lv2_command(app);
  grafx::cli::add_fit_command(app);
  grafx::cli::add_demo_command(app);
  grafx::cli::add_processors_command(app);
  grafx::cli::add_process_command(app);
  grafx::cli::add_prune_command(app);
  grafx::cli::add_loss_command(app);
  grafx::cli::add_bench_command(app);
  try {
    const char* env = std::getenv("GRAFX_THREADS");
    if (env && *env) {  // checked like --threads; empty is unset
      char* end  = nullptr;
      long value = std::strtol(env, &end, 10);
      if (*end != '\0' || value < 1 || value > 1024)
        throw grafx::Error("grafx.cli.threads", "GRAFX_THREADS=\"" + std::string(env) +
                                                    "\": expected a whole number of threads "
                                                    "from 1 to 1024");
      threads = int(value);
      grafx::cli::note_threads_chosen();
    }
    check_command(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, with a code like every other error (CLI11 adds a second line and its own exit
    // codes above 100).
    std::cerr << "grafx: error: ["
              << "grafx.cli.arguments"
              << "] " << e.what() << " (grafx --help, or grafx COMMAND --help)\n";
    return 2;
  } catch (...) {
    grafx::cli::remove_unfinished_outputs(std::current_exception());
    return grafx::report_current_error("grafx", with_force_hint);
  }
  return 0;
}
