#include "stop_request.h"

#include <grafx/error.h>

#include <atomic>
#include <csignal>

namespace grafx::cli {
namespace {

std::atomic<bool> stop_requested{false};

}  // namespace

StopRequest::StopRequest() {
  stop_requested = false;
  previous_int_  = std::signal(SIGINT, [](int) { stop_requested = true; });
  previous_term_ = std::signal(SIGTERM, [](int) { stop_requested = true; });
}

StopRequest::~StopRequest() {
  std::signal(SIGINT, previous_int_);
  std::signal(SIGTERM, previous_term_);
}

bool StopRequest::requested() const { return stop_requested; }

void stop_if_requested(const StopRequest& stop) {
  if (stop.requested())
    throw FitError("grafx.fit.interrupted", "interrupted before work began; nothing was written");
}

}  // namespace grafx::cli
