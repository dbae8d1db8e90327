#pragma once
/// What every grafx program (the `grafx` CLI and the benchmark programs) does with the error
/// that ends it and with the thread count it is asked for, so that they all behave alike.
///
///   int main(int argc, char** argv) {
///     return grafx::run_program("render_bench", [&] { ...; return 0; });
///   }
///
/// An error ends the program with one line on stderr, "PROGRAM: error: [code] message", and
/// status 1, never an uncaught exception (abort, status 134): grafx::Error with its own code;
/// std::bad_alloc and LibTorch's allocator failures as [grafx.cli.out_of_memory]; any other
/// exception (a LibTorch check, the standard library) as [grafx.internal] with its first line.
/// A message of several lines is joined into one.

#include <c10/core/Device.h>

#include <functional>
#include <string>

namespace grafx {

class Error;

/// Writes the line for the exception being handled (call it inside a `catch` block) to stderr
/// and returns the exit status, 1. `hint` may add words after a grafx::Error's message.
int report_current_error(const std::string& program,
                         const std::function<std::string(const Error&)>& hint = {});

/// Runs `work` and returns its status; an exception it throws is reported as above. Freed memory
/// is kept for reuse first (keep_freed_memory, grafx/memory.h).
int run_program(const std::string& program, const std::function<int()>& work);

/// The device `name` names ("cpu", "cuda", "cuda:N"), as programs take one from their users
/// (`grafx fit --device`, cuda_check's GRAFX_CHECK_DEVICE), once this LibTorch has allocated on
/// it. Throws Error `code`, "WHAT: expected cpu, cuda or cuda:N" for any other name (meta, for
/// one, does no arithmetic), and "WHAT: this LibTorch cannot use it (...)" for a device it
/// lacks.
c10::Device usable_device(const std::string& name, const std::string& what,
                          const std::string& code);

/// Threads per core above which more threads only cost: LibTorch's pools then spend their time
/// switching (1,024 threads on 2 cores took minutes for a second's work).
constexpr int kMaxThreadsPerCore = 4;

/// The number of threads to run with when `requested` are asked for: at most
/// kMaxThreadsPerCore per core of this machine. When it is fewer, `note` (if given) receives a
/// sentence saying so.
int capped_threads(int requested, std::string* note = nullptr);

}  // namespace grafx
