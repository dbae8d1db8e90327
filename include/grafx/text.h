#pragma once
/// Text for people and for markup: escaping for HTML, SVG and Graphviz labels, and numbers as
/// the reports, listings, messages and files print them. One home for each, so that every page
/// escapes alike and every number rounds alike.
///
///   escape_markup("a < b & \"c\"")   // "a &lt; b &amp; &quot;c&quot;"
///   significant_digits(0.123456, 4) // "0.1235"; 1e-05; inf
///   fixed_decimals(-0.001, 2)       // "0.00" (never "-0.00")
///   join({"kick", "bass"})            // "kick, bass"; join({}, "none"): "none"

#include <string>
#include <vector>

namespace grafx {

/// `text` with &, <, > and " replaced by their entities: safe in element text and in quoted
/// attributes of HTML and SVG, and in Graphviz's HTML-like labels.
std::string escape_markup(const std::string& text);

/// `value` with at most `digits` significant digits, in the shorter of plain and scientific
/// notation (iostream's default): 17 digits read back to the same double.
std::string significant_digits(double value, int digits);

/// `value` with exactly `decimals` decimals; a value that rounds to zero prints without a sign.
std::string fixed_decimals(double value, int decimals);

/// `items` separated by ", ", as messages list names; `none` when there are no items.
std::string join(const std::vector<std::string>& items, const std::string& none = "");

}  // namespace grafx
