#pragma once
// Ctrl-C and SIGTERM as a request to stop a long command after its current step.

namespace grafx::cli {

/// Ctrl-C and SIGTERM (a scheduler, `kill`) taken as a request to stop after the current step,
/// while an instance lives; the previous handlers come back when it goes. A command holds one
/// from its start (loading, set-up take seconds) and hands it to its stages.
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

/// Throws FitError [grafx.fit.interrupted] when a stop was requested while a fit or a pruning
/// loaded its inputs and set up, before anything was written.
void stop_if_requested(const StopRequest& stop);

}  // namespace grafx::cli
