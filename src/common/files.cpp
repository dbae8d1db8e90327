#include <grafx/error.h>
#include <grafx/files.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace grafx {
namespace fs = std::filesystem;

namespace {
std::atomic<uint64_t> limit_bytes{uint64_t{1} << 30};
}  // namespace

uint64_t input_limit() { return limit_bytes; }
void set_input_limit(uint64_t bytes) { limit_bytes = bytes; }

void check_input_size(const std::string& path, uint64_t bytes) {
  if (bytes > input_limit())
    throw IoError("grafx.io.too_large",
                  path + ": larger than the input limit of " + std::to_string(input_limit() >> 20) +
                      " MiB; raise it with grafx --max-input-mb if this is intended");
}

void check_path(const std::string& path, const std::string& code) {
  const size_t nul = path.find('\0');
  if (nul != std::string::npos)
    throw IoError(code, path.substr(0, nul) + "\\0...: a path holds no NUL character");
}

std::string read_text_file(const std::string& path) {
  check_path(path, "grafx.io.unreadable");
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw IoError("grafx.io.unreadable", path + ": is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("grafx.io.unreadable", path + ": " + std::strerror(errno));
  if (fs::is_regular_file(path, ec)) check_input_size(path, fs::file_size(path, ec));
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, size_t(in.gcount()));
    check_input_size(path, text.size());  // devices and pipes have no size to check first
  }
  if (in.bad()) throw IoError("grafx.io.unreadable", path + ": read failed");
  return text;
}

void check_writable(const std::string& path, bool overwrite) {
  check_path(path, "grafx.io.unwritable");
  std::error_code ec;
  if (!overwrite && fs::exists(path, ec))
    throw IoError("grafx.io.exists",
                  path +
                      ": exists already; refusing to overwrite it (choose another name or "
                      "allow overwriting)");
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw IoError("grafx.io.unwritable", path + ": folder " + parent.string() + " does not exist");
  // A write replaces its target by renaming a new file over it: a folder, device or pipe there
  // (as root, even /dev/null) would be lost, not written.
  const fs::file_status existing = fs::status(path, ec);
  if (fs::exists(existing) && !fs::is_regular_file(existing))
    throw IoError("grafx.io.unwritable",
                  path +
                      ": is not a regular file (a folder, device or pipe); refusing to "
                      "replace it: choose a file");
}

void check_not_an_input(const std::string& output, const std::vector<std::string>& inputs) {
  for (const auto& input : inputs) {
    std::error_code ec;
    if (fs::exists(output, ec) && fs::equivalent(output, input, ec))
      throw IoError("grafx.io.overwrites_input",
                    output + ": is an input of this command (" + input +
                        "); refusing to overwrite it, even with --force: choose another output");
  }
}

void check_no_input_inside(const std::string& folder, const std::vector<std::string>& inputs) {
  std::error_code ec;
  const fs::path outer = fs::weakly_canonical(folder, ec);
  if (ec) return;
  for (const auto& input : inputs) {
    const fs::path inner = fs::weakly_canonical(input, ec);
    if (ec) continue;
    // `inner` lies at or below `outer` when `outer`'s parts begin it.
    auto [end_of_outer, end_of_inner] =
        std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
    if (end_of_outer == outer.end())
      throw IoError("grafx.io.overwrites_input",
                    folder + ": holds an input of this command (" + input +
                        "), which replacing it would delete; refusing, even with --force: "
                        "choose another output");
  }
}

namespace {

/// The folder holding `path` ("." for a bare file name).
fs::path folder_of(const fs::path& path) {
  return path.parent_path().empty() ? fs::path(".") : path.parent_path();
}

/// Flushes a file or folder to the disk (best effort for folders, which some file systems
/// cannot sync); throws for a file that cannot be synced.
void sync_to_disk(const fs::path& path, bool folder, const std::string& what) {
  int fd = ::open(path.c_str(), folder ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) {
    if (folder) return;
    throw IoError("grafx.io.unwritable", what + ": " + std::strerror(errno));
  }
  int status = ::fsync(fd);
  int error  = errno;
  ::close(fd);
  if (status != 0 && !folder)
    throw IoError("grafx.io.unwritable", what + ": " + std::strerror(error));
}

/// Removes the temporary files that writes of `target` by processes no longer running left
/// behind (".<stem>.tmp<pid>-<n><extension>"), e.g. after a kill -9.
void remove_stale_temporaries(const fs::path& target) {
  const std::string prefix = "." + target.stem().string() + ".tmp",
                    suffix = target.extension().string();
  const fs::path folder    = folder_of(target);
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    char* end_of_pid = nullptr;
    long pid         = std::strtol(name.c_str() + prefix.size(), &end_of_pid, 10);
    if (pid <= 0 || *end_of_pid != '-') continue;
    if (::kill(pid_t(pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    }
  }
}

}  // namespace

void write_atomically(const std::string& path, bool overwrite,
                      const std::function<void(const std::string&)>& write) {
  check_writable(path, overwrite);
  static std::atomic<int> counter{0};
  fs::path target(path);
  remove_stale_temporaries(target);
  fs::path temporary =
      target.parent_path() / ("." + target.stem().string() + ".tmp" + std::to_string(::getpid()) +
                              "-" + std::to_string(counter++) + target.extension().string());
  try {
    write(temporary.string());
    sync_to_disk(temporary, false, path);  // the data on disk before the name points at it
    std::error_code ec;
    if (!overwrite && fs::exists(target, ec))  // appeared while we were writing
      throw IoError("grafx.io.exists", path + ": appeared while writing; not overwritten");
    fs::rename(temporary, target, ec);
    if (ec) throw IoError("grafx.io.unwritable", path + ": " + ec.message());
    sync_to_disk(folder_of(target), true, path);
  } catch (...) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw;
  }
}

void write_text_file(const std::string& path, const std::string& contents, bool overwrite) {
  write_atomically(path, overwrite, [&](const std::string& temporary) {
    std::ofstream out(temporary, std::ios::binary);
    if (!out) throw IoError("grafx.io.unwritable", path + ": " + std::strerror(errno));
    out << contents;
    out.close();
    if (!out)
      throw IoError("grafx.io.unwritable", path + ": cannot write it: " + std::strerror(errno));
  });
}

}  // namespace grafx
