#pragma once
/// Errors of grafx.
///
/// Every caller mistake throws a `grafx::Error` (or a subclass naming its layer) that carries a
/// stable code such as `grafx.graph.cycle` and a message naming the node, port, field or file
/// involved. `what()` reads "[code] message". The codes are listed in docs/errors.md.
/// A library never aborts the process; the CLI turns an Error into one line on stderr.

#include <stdexcept>
#include <string>

namespace grafx {

class Error : public std::runtime_error {
 public:
  Error(std::string code, const std::string& message)
      : std::runtime_error("[" + code + "] " + message),
        code_(std::move(code)),
        message_(message) {}

  /// Stable identifier, e.g. "grafx.graph.cycle".
  const std::string& code() const noexcept { return code_; }
  /// The message without the code prefix.
  const std::string& message() const noexcept { return message_; }

 private:
  std::string code_;
  std::string message_;
};

/// Problems with a graph: unknown types or ports, cycles, duplicate edges, validation.
class GraphError : public Error {
 public:
  using Error::Error;
};

/// Problems with a schedule request: an exhausted fixed type list, an unschedulable graph.
class ScheduleError : public Error {
 public:
  using Error::Error;
};

/// Problems with render inputs: sources, parameters, processors.
class RenderError : public Error {
 public:
  using Error::Error;
};

/// Problems with a processor's construction or inputs.
class ProcessorError : public Error {
 public:
  using Error::Error;
};

/// Problems reading or writing files: unreadable, malformed, mismatched.
class IoError : public Error {
 public:
  using Error::Error;
};

/// Problems with fitting settings or data.
class FitError : public Error {
 public:
  using Error::Error;
};

/// Problems with loss options or loss inputs: shapes, dtypes, lengths.
class LossError : public Error {
 public:
  using Error::Error;
};

}  // namespace grafx
