#pragma once
/// Durations as people read them, for progress lines, estimates and summaries (`grafx fit`,
/// `grafx prune`).
///
///   format_duration(0.4);    // "0.4 s"
///   format_duration(190);    // "3 min 10 s"
///   format_duration(3900);   // "1 h 05 min"

#include <string>

namespace grafx {

/// Below 10 s with a decimal (two significant digits below 1 s: "0.45 s", "2.5 s"); then whole
/// seconds ("42 s"), minutes and seconds ("3 min 10 s", "1 min 00 s" for 59.6 s) and from an
/// hour on hours and minutes ("1 h 05 min", "25 h 00 min"), each rounded to its last unit. "?"
/// for a negative or non-finite duration (an estimate without data).
std::string format_duration(double seconds);

}  // namespace grafx
