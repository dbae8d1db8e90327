#pragma once
// Helpers shared by the tests: error expectations, temporary folders, running the CLI.

#include <grafx/error.h>
#include <grafx/graph/console.h>
#include <grafx/processors/registry.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

/// Expects `statement` to throw a grafx::Error with `error_code` whose message contains `text`.
#define EXPECT_GRAFX_ERROR(statement, error_code, text)                           \
  do {                                                                            \
    bool grafx_thrown = false;                                                    \
    try {                                                                         \
      statement;                                                                  \
    } catch (const grafx::Error& grafx_error) {                                   \
      grafx_thrown = true;                                                        \
      EXPECT_EQ(grafx_error.code(), error_code) << grafx_error.what();            \
      EXPECT_NE(std::string(grafx_error.what()).find(text), std::string::npos)    \
          << "message \"" << grafx_error.what() << "\" lacks \"" << text << "\""; \
    }                                                                             \
    EXPECT_TRUE(grafx_thrown) << #statement << " did not throw " << (error_code); \
  } while (0)

namespace grafx {

/// The paper's console chain (e c n s g d r): the registry's default_console_chain().
const std::vector<std::string>& console_chain();
/// The registry's node types (the console's among them).
NodeTypes console_node_types();
/// build_console with the registry's types, and the paper's chain when the options name none.
Console build_console(ConsoleOptions options);
/// A console of every kind of routing for renderer equivalence tests: 4 tracks in 2 groups
/// through `chain`, every node dry/wet, a reverb send bus, track 1 keying a sidechain
/// compressor on track 0.
Graph routed_console(const std::vector<std::string>& chain);

}  // namespace grafx

namespace grafx::testing {

/// max |a − b| relative to max |b|.
inline double relative_error(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() / std::max(b.abs().max().item<double>(), 1e-30);
}

/// A fresh folder under the system's temporary folder, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&)            = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;  ///< standard output
  std::string err;  ///< standard error
};

/// Runs the grafx program (path from $GRAFX_BIN) with shell-quoted arguments, these
/// environment variables set, and under `wrapper` if given (e.g. {"timeout", "-s", "TERM", "5"}).
CommandResult run_grafx(const std::vector<std::string>& args,
                        const std::map<std::string, std::string>& environment = {},
                        const std::vector<std::string>& wrapper               = {});

/// A wrapper for run_grafx that sends `signal` (SIGINT, SIGTERM) once the program handles it (its
/// /proc status lists a handler), so a test interrupts it neither before its handler is set,
/// where the signal would kill it, nor after work a fast machine finished within a fixed delay.
std::vector<std::string> signal_once_handled(int signal);

/// A wrapper for run_grafx that sends `signal` once a line of the program's standard output
/// starts with `line_start`; that output goes, line by line, to the file named by the
/// environment variable OUT (give it to run_grafx), not to CommandResult::out.
std::vector<std::string> signal_once_printed(int signal, const std::string& line_start);

/// The repository's test audio folder, testdata/.
std::string testdata_dir();

bool contains(const std::string& text, const std::string& part);
bool file_exists(const std::string& path);
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& contents);

}  // namespace grafx::testing
