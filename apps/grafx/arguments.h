#pragma once
// Helpers of argument parsing and printing shared by the commands: numbers and their validators,
// lists, counts, notes, the thread choice, the fit settings as options.

#include <grafx/fit/fit.h>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace grafx::cli {

/// Prints the notes of trim_to_shortest (grafx/fit/fit_record.h) as "grafx: note: ..." lines.
void print_notes(const std::vector<std::string>& notes);
/// Whether the user chose the thread count (--threads or GRAFX_THREADS); otherwise fits adapt
/// it to the machine's load (FitOptions::adapt_threads).
bool threads_chosen();
/// Records that the user chose it (main, as it reads the command line).
void note_threads_chosen();

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

}  // namespace grafx::cli
