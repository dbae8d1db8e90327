#pragma once
// Output folders of the commands: prepared once everything is checked, removed again when a command
// fails (nothing half-written is left).

#include <CLI/CLI.hpp>

#include <exception>
#include <string>
#include <vector>

namespace grafx::cli {

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
/// Adds the usual "--force" flag (replace existing outputs) to a subcommand.
CLI::Option* add_force_flag(CLI::App& command, bool& force);

}  // namespace grafx::cli
