// The progress file of --progress-json (progress_file.h).

#include "progress_file.h"

#include <grafx/files.h>

#include <chrono>

namespace grafx::cli {
namespace {

/// The file's fields before any progress.
nlohmann::json no_progress() { return {{"format", "grafx.progress"}, {"version", 1}}; }

struct ProgressFile {
  std::string path;
  nlohmann::json progress = no_progress();
  std::chrono::steady_clock::time_point written;
};

ProgressFile& progress_file() {
  static ProgressFile file;
  return file;
}

void write_progress() {
  ProgressFile& file = progress_file();
  file.progress["updated"] =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  write_text_file(file.path, file.progress.dump() + "\n", /*overwrite=*/true);
  file.written = std::chrono::steady_clock::now();
}

}  // namespace

void set_progress_file(const std::string& path) {
  progress_file().path = path;
  if (!path.empty()) write_progress();
}

void report_progress(const nlohmann::json& fields, bool now) {
  ProgressFile& file = progress_file();
  if (file.path.empty()) return;
  if (fields.contains("stage") && file.progress.value("stage", "") != fields["stage"])
    file.progress = no_progress();  // a new stage's fields only
  file.progress.update(fields);     // NaN and infinity are written as null
  if (now || std::chrono::steady_clock::now() - file.written >= std::chrono::milliseconds(250))
    write_progress();
}

}  // namespace grafx::cli
