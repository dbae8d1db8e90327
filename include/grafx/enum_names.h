#pragma once
/// The names of an enumeration's values, written once as a table from which
/// both directions are read, instead of a `to_string` switch and a `parse_*`
/// chain of comparisons kept in step by hand.
///
///   constexpr EnumNames<PruneMethod, 3> kPruneMethods{{
///       {PruneMethod::kHybrid, "hybrid"}, {PruneMethod::kDryWet, "dry-wet"},
///       ...}};
///   name_of(kPruneMethods, PruneMethod::kDryWet)   // "dry-wet"
///   value_named(kPruneMethods, "dry-wet")          // PruneMethod::kDryWet;
///   nullopt if none names_listed(kPruneMethods, " or ")            // "hybrid,
///   dry-wet or brute-force"

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>

namespace grafx {

template <typename Enum, size_t N>
using EnumNames = std::array<std::pair<Enum, const char*>, N>;

/// The name of `value` ("?" for a value the table lacks: a corrupt one).
template <typename Enum, size_t N>
std::string name_of(const EnumNames<Enum, N>& names, Enum value) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return "?";
}

/// The value named `name`, if any.
template <typename Enum, size_t N>
std::optional<Enum> value_named(const EnumNames<Enum, N>& names, const std::string& name) {
  for (const auto& [v, n] : names)
    if (name == n) return v;
  return std::nullopt;
}

/// The names in the table's order, separated by ", " and the last by
/// `last_separator`, for messages ("expected hybrid, dry-wet or brute-force").
template <typename Enum, size_t N>
std::string names_listed(const EnumNames<Enum, N>& names, const std::string& last_separator) {
  std::string listed;
  for (size_t i = 0; i < N; ++i)
    listed += (i == 0 ? "" : i + 1 == N ? last_separator : ", ") + std::string(names[i].second);
  return listed;
}

}  // namespace grafx
