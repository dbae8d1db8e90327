#include "bench_support.h"

#include <grafx/error.h>
#include <grafx/program.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <ostream>
#include <sstream>
#include <thread>

namespace grafx::bench {

std::vector<double> parse_arguments(int argc, char** argv,
                                    const std::vector<NumberArgument>& arguments) {
  std::string usage = std::string("usage: ") + argv[0];
  for (const auto& a : arguments)
    usage += " [" + a.name + "=" +
             fixed(a.default_value, a.default_value == std::floor(a.default_value) ? 0 : 2) + "]";
  auto fail = [&](const std::string& why) {
    std::cerr << argv[0] << ": " << why << "\n" << usage << "\n";
    std::exit(2);
  };
  std::vector<double> values;
  for (const auto& a : arguments) values.push_back(a.default_value);
  for (int i = 1; i < argc; ++i) {
    std::string text = argv[i];
    if (text == "--help" || text == "-h") {
      std::cout << usage << "\n";
      std::exit(0);
    }
    if (size_t(i) > arguments.size()) fail("unexpected argument \"" + text + "\"");
    const NumberArgument& a = arguments[size_t(i - 1)];
    char* end               = nullptr;
    double value            = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(value) || value < a.min || value > a.max)
      fail("expected " + a.name + " from " + fixed(a.min, 0) + " to " + fixed(a.max, 0) +
           ", but got \"" + text + "\"");
    values[size_t(i - 1)] = value;
  }
  return values;
}

Timing time_it(const std::function<void()>& work, int min_repeats, double min_seconds) {
  using clock = std::chrono::steady_clock;
  work();  // warm-up: caches, allocator, plans
  std::vector<double> ms;
  auto start = clock::now();
  while (static_cast<int>(ms.size()) < min_repeats ||
         std::chrono::duration<double>(clock::now() - start).count() < min_seconds) {
    auto t0 = clock::now();
    work();
    ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front(), static_cast<int>(ms.size())};
}

int setup_threads() {
  int threads     = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const char* env = std::getenv("GRAFX_THREADS");
  if (env && *env) {  // as the grafx program: a whole number from 1 to 1024, empty is unset
    char* end  = nullptr;
    long value = std::strtol(env, &end, 10);
    if (*end != '\0' || value < 1 || value > 1024)
      throw Error("grafx.cli.threads", "GRAFX_THREADS=\"" + std::string(env) +
                                           "\": expected a whole number of threads from 1 to 1024");
    threads = int(value);
  }
  std::string note;
  threads = capped_threads(threads, &note);
  if (!note.empty()) std::cerr << "note: GRAFX_THREADS: " << note << "\n";
  at::set_num_threads(threads);
  return threads;
}

std::string machine_description() {
  std::string cpu = "unknown CPU";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  std::ostringstream s;
  s << std::thread::hardware_concurrency() << " cores (" << cpu << "), LibTorch "
    << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "." << TORCH_VERSION_PATCH << ", "
    << at::get_num_threads() << " threads, " << GRAFX_BUILD_TYPE << " build";
  return s.str();
}

void Table::print(std::ostream& out) const {
  auto line = [&](const std::vector<std::string>& cells) {
    out << "|";
    for (const auto& cell : cells) out << " " << cell << " |";
    out << "\n";
  };
  line(header_);
  out << "|";
  for (size_t i = 0; i < header_.size(); ++i) out << (i == 0 ? "---|" : "---:|");
  out << "\n";
  for (const auto& row : rows_) line(row);
}

std::string fixed(double value, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << value;
  return s.str();
}

}  // namespace grafx::bench
