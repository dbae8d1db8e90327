#include <grafx/error.h>
#include <grafx/program.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <iostream>
#include <new>
#include <thread>

namespace grafx {
namespace {

// The first line of an exception message: LibTorch appends a C++ stack trace to its own.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

int report_current_error(const std::string& program,
                         const std::function<std::string(const Error&)>& hint) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    // No allocation here: the message is made of literals.
    std::cerr << program.c_str() << ": error: ["
              << "grafx.cli.out_of_memory"
              << "] out of memory: the input is too large for this machine (nothing was "
                 "written)\n";
  } catch (const Error& e) {
    std::cerr << program << ": error: " << e.what() << (hint ? hint(e) : "") << "\n";
  } catch (const c10::Error& e) {
    const std::string what = first_line(e.what_without_backtrace());
    // LibTorch's CPU allocator reports failures as c10::Error, not std::bad_alloc.
    const size_t tried = what.find("you tried to allocate");
    if (what.find("can't allocate memory") != std::string::npos && tried != std::string::npos)
      std::cerr << program << ": error: [grafx.cli.out_of_memory] out of memory: "
                << what.substr(tried, what.find('.', tried) - tried)
                << " (LibTorch's CPU allocator)\n";
    else
      std::cerr << program << ": error: " << what << "\n";
  } catch (const std::exception& e) {
    std::cerr << program << ": error: " << first_line(e.what()) << "\n";
  } catch (...) {
    std::cerr << program << ": error: an unknown exception\n";
  }
  return 1;
}

int run_program(const std::string& program, const std::function<int()>& work) {
  try {
    return work();
  } catch (...) {
    return report_current_error(program);
  }
}

int capped_threads(int requested, std::string* note) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int most  = kMaxThreadsPerCore * cores;
  if (requested <= most) return requested;
  if (note)
    *note = std::to_string(requested) + " threads asked for, but this machine has " +
            std::to_string(cores) + " core" + (cores == 1 ? "" : "s") + ": using " +
            std::to_string(most) + " (at most " + std::to_string(kMaxThreadsPerCore) +
            " per core; more only slow LibTorch down)";
  return most;
}

}  // namespace grafx
