#include <grafx/error.h>
#include <grafx/files.h>

#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace grafx {
namespace fs = std::filesystem;

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw IoError("grafx.io.unreadable", path + ": is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("grafx.io.unreadable", path + ": " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw IoError("grafx.io.unreadable", path + ": read failed");
  return s.str();
}

void check_writable(const std::string& path, bool overwrite) {
  std::error_code ec;
  if (!overwrite && fs::exists(path, ec))
    throw IoError("grafx.io.exists",
                  path +
                      ": exists already; refusing to overwrite it (choose another name or "
                      "allow overwriting)");
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw IoError("grafx.io.unwritable", path + ": folder " + parent.string() + " does not exist");
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

void write_atomically(const std::string& path, bool overwrite,
                      const std::function<void(const std::string&)>& write) {
  check_writable(path, overwrite);
  static std::atomic<int> counter{0};
  fs::path target(path);
  fs::path temporary =
      target.parent_path() / ("." + target.stem().string() + ".tmp" + std::to_string(::getpid()) +
                              "-" + std::to_string(counter++) + target.extension().string());
  try {
    write(temporary.string());
    std::error_code ec;
    if (!overwrite && fs::exists(target, ec))  // appeared while we were writing
      throw IoError("grafx.io.exists", path + ": appeared while writing; not overwritten");
    fs::rename(temporary, target, ec);
    if (ec) throw IoError("grafx.io.unwritable", path + ": " + ec.message());
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
    if (!out) throw IoError("grafx.io.unwritable", path + ": write failed");
  });
}

}  // namespace grafx
