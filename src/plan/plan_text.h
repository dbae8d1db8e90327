#pragma once
// Text and JSON pieces shared by the render plan and its adjoint (private to plan).

#include <grafx/plan/render_plan.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace grafx::detail {

/// "[1, 2, 3]".
inline std::string list(const std::vector<int64_t>& items) {
  std::string text;
  for (int64_t i : items) text += (text.empty() ? "" : ", ") + std::to_string(i);
  return "[" + text + "]";
}

/// null, {"slice": [start, end]} or {"index": [...]}.
inline nlohmann::json to_json(const RowAccess& a) {
  switch (a.kind) {
    case RowAccess::Kind::kNone:
      return nullptr;
    case RowAccess::Kind::kSlice:
      return {{"slice", {a.start, a.end}}};
    case RowAccess::Kind::kIndex:
      return {{"index", a.index}};
  }
  return nullptr;
}

}  // namespace grafx::detail
