#include <grafx/error.h>
#include <grafx/memory.h>
#include <grafx/program.h>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <iostream>
#include <new>
#include <thread>

namespace grafx {
namespace {

// The first line of an exception message: LibTorch appends a C++ stack trace to its own.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// A message on one line, however it was made (a library's text, e.g. Graphviz's, may hold
// several): line breaks become "; ".
std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at))
    text.replace(at, 1, "; ");
  return text;
}

// An exception that is no grafx::Error is a failure grafx did not foresee.
void report_unexpected(const std::string& program, const std::string& what) {
  std::cerr << program << ": error: [grafx.internal] " << what
            << " (unexpected: please report it with the command that caused it)\n";
}

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
    std::cerr << program << ": error: " << one_line(e.what()) << (hint ? hint(e) : "") << "\n";
  } catch (const c10::Error& e) {
    const std::string what = first_line(e.what_without_backtrace());
    // LibTorch's CPU allocator reports failures as c10::Error, not std::bad_alloc.
    const size_t tried = what.find("you tried to allocate");
    if (what.find("can't allocate memory") != std::string::npos && tried != std::string::npos)
      std::cerr << program << ": error: [grafx.cli.out_of_memory] out of memory: "
                << what.substr(tried, what.find('.', tried) - tried)
                << " (LibTorch's CPU allocator)\n";
    else
      report_unexpected(program, what);
  } catch (const std::exception& e) {
    report_unexpected(program, first_line(e.what()));
  } catch (...) {
    report_unexpected(program, "an unknown exception");
  }
  return 1;
}

int run_program(const std::string& program, const std::function<int()>& work) {
  keep_freed_memory();
  try {
    return work();
  } catch (...) {
    return report_current_error(program);
  }
}

c10::Device usable_device(const std::string& name, const std::string& what,
                          const std::string& code) {
  c10::Device device = c10::kMeta;
  try {
    device = c10::Device(name);
  } catch (const c10::Error&) {  // refused below
  }
  if (!device.is_cpu() && !device.is_cuda())
    throw Error(code, what + ": expected cpu, cuda or cuda:N");
  try {
    at::empty({1}, at::TensorOptions().device(device));
  } catch (const c10::Error&) {
    throw Error(code, what +
                          ": this LibTorch cannot use it (built without it, or no such device "
                          "on this machine)");
  }
  return device;
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
