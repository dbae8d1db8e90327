#pragma once
// Shared benchmark harness: timing with warm-up and repeats, thread setup, markdown tables.

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace grafx::bench {

struct Timing {
  double median_ms = 0;
  double min_ms    = 0;
  int repeats      = 0;
};

/// Runs `work` once to warm up, then repeatedly until both `min_repeats` runs and `min_seconds`
/// of work are done; reports the median and minimum.
Timing time_it(const std::function<void()>& work, int min_repeats = 5, double min_seconds = 0.5);

/// A number a benchmark program takes on its command line.
struct NumberArgument {
  std::string name;  ///< e.g. "seconds"
  double default_value, min, max;
};

/// The program's positional numbers (missing ones take their defaults). `--help` prints the
/// usage and exits 0; anything else that is not such a number in its range prints the reason and
/// the usage and exits 2.
std::vector<double> parse_arguments(int argc, char** argv,
                                    const std::vector<NumberArgument>& arguments);

/// Sets LibTorch's CPU threads to $GRAFX_THREADS or all cores; returns the count. As the grafx
/// program: a count that is not 1 to 1024 throws [grafx.cli.threads], and more than
/// kMaxThreadsPerCore per core are capped with a note (grafx/program.h).
int setup_threads();

/// "2 cores (Intel Xeon ...), LibTorch 1.13.1, 2 threads, Release build": printed above every
/// table.
std::string machine_description();

/// A markdown table.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

/// Formats a number with `digits` decimals.
std::string fixed(double value, int digits = 2);

}  // namespace grafx::bench
