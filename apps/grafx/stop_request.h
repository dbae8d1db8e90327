#pragma once
// Ctrl-C and SIGTERM as a request to stop a long command after its current step.

namespace grafx::cli {

/// Ctrl-C and SIGTERM (a scheduler, `kill`) taken as a request to stop after the current step,
/// while an instance lives; the previous handlers come back when it goes.
class StopRequest {
 public:
  StopRequest();
  ~StopRequest();
  StopRequest(const StopRequest&)            = delete;
  StopRequest& operator=(const StopRequest&) = delete;
  bool requested() const;

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
};

}  // namespace grafx::cli
