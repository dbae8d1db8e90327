#pragma once
// --progress-json FILE: a command's progress as JSON, for programs that watch it (the dataset
// runner) instead of reading the lines printed for people. The file is replaced atomically as the
// progress changes: at most four times a second while a fit steps, after each pruning trial (each
// a whole-song loss), and at each stage's end:
//   {"format": "grafx.progress", "version": 1, "stage": "fit", "step": 120, "steps": 500,
//    "loss": 0.61, "steps_per_second": 7.9, "eta_seconds": 48.1, "updated": 1796000000.5}
// A pruning run adds "round", "rounds", "method", "processors" and "best_loss" (and "step" and
// "steps" while it fine-tunes). Numbers that are not finite are null.

#include <nlohmann/json.hpp>

#include <string>

namespace grafx::cli {

/// Where the progress goes (from --progress-json; empty: nowhere). Writes the file once at once,
/// so that a path that cannot be written is refused before any work.
void set_progress_file(const std::string& path);

/// Sets `fields` (replacing those of another stage when `fields` names a new "stage") and writes
/// the file, unless it was written less than a quarter second ago and `now` is false.
void report_progress(const nlohmann::json& fields, bool now = false);

}  // namespace grafx::cli
