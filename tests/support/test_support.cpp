#include "support/test_support.h"

#include <grafx/processors/registry.h>

#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace grafx {

const std::vector<std::string>& console_chain() {
  static const std::vector<std::string> chain = default_console_chain();
  return chain;
}

NodeTypes console_node_types() { return registry_node_types(); }

Console build_console(ConsoleOptions options) {
  if (options.chain.empty()) options.chain = console_chain();
  return build_console(options, console_node_types());
}

Graph routed_console(const std::vector<std::string>& chain) {
  ConsoleOptions options;
  options.n_tracks     = 4;
  options.track_groups = {0, 0, 1, 1};
  options.chain        = chain;
  options.dry_wet      = true;
  options.sends        = {{"reverb", {"reverb"}, {}}};
  options.sidechains   = {{1, 0, "sidechain_compressor"}};
  return build_console(options).graph;
}

}  // namespace grafx

namespace grafx::testing {
namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "grafx-test-XXXXXX").string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data())) throw std::runtime_error("mkdtemp failed");
  path_ = buffer.data();
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

namespace {
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

CommandResult run_grafx(const std::vector<std::string>& args,
                        const std::map<std::string, std::string>& environment,
                        const std::vector<std::string>& wrapper) {
  const char* bin = std::getenv("GRAFX_BIN");
  if (!bin) throw std::runtime_error("GRAFX_BIN is not set (run the tests through ctest)");
  TempDir scratch;
  std::string command = "env";
  for (const auto& [name, value] : environment) command += " " + shell_quote(name + "=" + value);
  for (const auto& word : wrapper) command += " " + shell_quote(word);
  command += " " + shell_quote(bin);
  for (const auto& arg : args) command += " " + shell_quote(arg);
  command += " 2>" + shell_quote(scratch.file("stderr"));
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed");
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  int status       = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err       = read_file(scratch.file("stderr"));
  return result;
}

std::vector<std::string> signal_once_handled(int signal) {
  // SigCgt is a 64-bit mask in hex; bit n-1 is signal n (the signals here are below 32). Until
  // the child has exec'd the program it is a copy of this shell, which catches SIGINT (sh -c)
  // and would exit 130: so the mask is read only once the child runs another executable.
  const char* script =
      "n=$1; shift; \"$@\" & p=$!; s=$(readlink /proc/$$/exe); while kill -0 $p 2>/dev/null; do "
      "m=; [ \"$(readlink /proc/$p/exe 2>/dev/null)\" != \"$s\" ] && "
      "m=$(sed -n 's/^SigCgt:[[:space:]]*//p' /proc/$p/status 2>/dev/null); "
      "[ -n \"$m\" ] && [ $(( 0x${m#????????} >> (n - 1) & 1 )) = 1 ] && break; sleep 0.01; "
      "done; kill -$n $p 2>/dev/null; wait $p";
  return {"sh", "-c", script, "sh", std::to_string(signal)};
}

std::vector<std::string> signal_once_printed(int signal, const std::string& line_start) {
  const char* script =
      "n=$1; s=$2; shift 2; stdbuf -oL \"$@\" > \"$OUT\" & p=$!; "
      "while kill -0 $p 2>/dev/null && ! grep -q \"^$s\" \"$OUT\" 2>/dev/null; do sleep 0.05; "
      "done; kill -$n $p 2>/dev/null; wait $p";
  return {"sh", "-c", script, "sh", std::to_string(signal), line_start};
}

std::string testdata_dir() { return GRAFX_TESTDATA_DIR; }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool file_exists(const std::string& path) { return fs::exists(path); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary) << contents;
}

}  // namespace grafx::testing
