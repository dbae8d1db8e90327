// Output folders (output_folder.h): prepared, locked and cleaned up so that a failed or
// interrupted command never leaves a folder mixing two runs.

#include "output_folder.h"

#include <grafx/error.h>
#include <grafx/files.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

namespace grafx::cli {

namespace {

namespace fs = std::filesystem;

/// An output folder this process prepared (or made), to be removed again if the command fails:
/// the whole folder when it made it, else the files of `files` (none of which was there: an
/// earlier run's were refused or, with --force, removed).
struct MadeOutput {
  fs::path folder;
  bool created = false;
  std::vector<std::string> files;
};

std::vector<MadeOutput>& made_outputs() {
  static std::vector<MadeOutput> made;
  return made;
}

IoError locked_error(const std::string& path) {
  return IoError("grafx.io.locked",
                 path +
                     ": another grafx command (a fit, demo or pruning) is writing this folder; "
                     "wait for it to end, or choose another folder");
}

/// Takes the exclusive lock on a folder (flock, released by the system when the process ends,
/// however it ends), or throws [grafx.io.locked] if another process holds it. With `hold`
/// false, only checks that it is free.
void lock_folder(const std::string& path, bool hold) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw IoError("grafx.io.unwritable", path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) throw locked_error(path);
    throw IoError("grafx.io.unwritable", path + ": cannot lock it: " + std::strerror(error));
  }
  if (!hold) ::close(fd);  // closing releases it
  // Otherwise held (the descriptor stays open) until the process ends.
}

/// check_output_folder's refusals on the folder's contents.
void check_folder_contents(const std::string& path, const std::vector<std::string>& files,
                           bool resume, bool force, const std::string& what) {
  fs::path folder(path);
  if (!fs::exists(folder)) {
    if (resume) throw FitError("grafx.fit.checkpoint", path + ": no such folder to resume from");
    if (!folder.parent_path().empty() && !fs::is_directory(folder.parent_path()))
      throw IoError("grafx.io.unwritable",
                    path + ": folder " + folder.parent_path().string() + " does not exist");
    return;
  }
  if (!fs::is_directory(folder))
    throw IoError("grafx.io.unwritable", path + ": exists and is not a folder");
  if (resume || force) return;
  for (const auto& name : files)
    if (fs::exists(folder / name))
      throw IoError("grafx.io.exists", path + ": holds the results of an earlier " + what +
                                           "; continue it with --resume, replace it with "
                                           "--force, or choose another folder");
}

}  // namespace

void check_output_folder(const std::string& path, const std::vector<std::string>& files,
                         bool resume, bool force, const std::string& what) {
  check_folder_contents(path, files, resume, force, what);
  if (fs::is_directory(path)) lock_folder(path, /*hold=*/false);
}

void prepare_output_folder(const std::string& path, const std::vector<std::string>& files,
                           bool resume, bool force, const std::string& what) {
  check_folder_contents(path, files, resume, force, what);
  fs::path folder(path);
  std::error_code ec;
  const bool created = !fs::exists(folder);
  if (created) {
    fs::create_directory(folder, ec);
    if (ec) throw IoError("grafx.io.unwritable", path + ": " + ec.message());
  }
  // A resumed run's folder holds the earlier run's work, never removed.
  if (!resume) made_outputs().push_back({folder, created, files});
  // Two runs into one folder would mix their files: the first holds the folder to its end.
  lock_folder(path, /*hold=*/true);
  // Checked again under the lock: a run that ended meanwhile may have left its results.
  check_folder_contents(path, files, resume, force, what);
  if (resume || !force) return;
  // Removed now, so that an interrupted run never leaves a folder mixing two runs; only
  // grafx's own outputs, never other files.
  for (const auto& name : files) {
    if (!fs::exists(folder / name)) continue;
    fs::remove(folder / name, ec);
    if (ec) throw IoError("grafx.io.unwritable", (folder / name).string() + ": " + ec.message());
  }
}

void make_output_subfolder(const std::string& path, const std::vector<std::string>& files) {
  const bool created = !fs::is_directory(path);
  std::error_code ec;
  if (created) fs::create_directory(path, ec);
  if (ec) throw IoError("grafx.io.unwritable", path + ": " + ec.message());
  made_outputs().push_back({path, created, files});
}

void note_written(const std::string& file) {
  const fs::path path(file);
  made_outputs().push_back({path.parent_path(), false, {path.filename().string()}});
}

void keep_outputs(const std::string& path) {
  auto& made = made_outputs();
  made.erase(std::remove_if(made.begin(), made.end(),
                            [&](const MadeOutput& m) { return m.folder == fs::path(path); }),
             made.end());
}

void remove_unfinished_outputs(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    if (e.code() == "grafx.fit.interrupted") return;  // kept for --resume, as the error says
  } catch (...) {
  }
  auto& made = made_outputs();
  for (auto m = made.rbegin(); m != made.rend(); ++m) {  // subfolders before their folders
    std::error_code ec;                                  // best effort: the error is reported
    if (m->created) fs::remove_all(m->folder, ec);
    for (const auto& name : m->files) fs::remove(m->folder / name, ec);
  }
  made.clear();
}

CLI::Option* add_force_flag(CLI::App& command, bool& force) {
  return command.add_flag("-f,--force", force, "Replace output files that exist already");
}

}  // namespace grafx::cli
