// Checks of the source tree itself, so that the rules of CONTRIBUTING.md hold without anyone
// remembering them: layers include only lower layers (the order is read from docs/design.md),
// the real-time layer `stream` reaches no LibTorch header, and the error catalogue
// (docs/errors.md) lists exactly the codes the code throws. Plain C++ (no LibTorch), reading the
// tree from $GRAFX_SOURCE_DIR.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

fs::path source_dir() {
  const char* dir = std::getenv("GRAFX_SOURCE_DIR");
  if (!dir) throw std::runtime_error("GRAFX_SOURCE_DIR is not set (run the tests through ctest)");
  return dir;
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream file(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  return lines;
}

/// Every .h and .cpp file under `folders` of the source tree, sorted.
std::vector<fs::path> sources(const std::vector<std::string>& folders,
                              const std::set<std::string>& extensions = {".h", ".cpp"}) {
  std::vector<fs::path> files;
  for (const auto& folder : folders) {
    fs::path root = source_dir() / folder;
    if (!fs::exists(root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      std::string ext = entry.path().extension().string();
      if (entry.is_regular_file() && extensions.count(ext)) files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string relative_path(const fs::path& path) {
  return fs::relative(path, source_dir()).string();
}

/// The layers, lowest first, from the line "Layers, lowest first: `a` → `b` → ..." of
/// docs/design.md.
std::vector<std::string> layer_order() {
  for (const auto& line : lines_of(source_dir() / "docs/design.md")) {
    if (line.rfind("Layers, lowest first:", 0) != 0) continue;
    std::vector<std::string> layers;
    std::regex name("`([a-z_]+)`");
    for (std::sregex_iterator it(line.begin(), line.end(), name), end; it != end; ++it)
      layers.push_back((*it)[1]);
    return layers;
  }
  return {};
}

/// The layer of a file of the tree ("" for files outside the layers, e.g. tests).
std::string layer_of_file(const std::string& path) {
  std::smatch m;
  if (std::regex_match(path, m, std::regex("include/grafx/([a-z_]+)/.*"))) return m[1];
  if (std::regex_match(path, m, std::regex("include/grafx/[a-z_]+\\.h"))) return "common";
  if (std::regex_match(path, m, std::regex("src/([a-z_]+)/.*"))) return m[1];
  if (path.rfind("apps/", 0) == 0) return "apps";
  if (path.rfind("python/src/", 0) == 0) return "python";
  return "";
}

/// The layer an include names: <grafx/LAYER/x.h>, <grafx/x.h> (common) or "LAYER/x.h" (a
/// private header of src/LAYER); "" for others (the standard library, LibTorch, the app's own).
std::string layer_of_include(const std::string& line) {
  // Compiled once: this runs for every line of the tree.
  static const std::regex layer_header(R"(^\s*#\s*include\s*[<"]grafx/([a-z_]+)/)");
  static const std::regex common_header(R"(^\s*#\s*include\s*[<"]grafx/[a-z_]+\.h[>"])");
  static const std::regex private_header(R"(^\s*#\s*include\s*"([a-z_]+)/)");
  std::smatch m;
  if (std::regex_search(line, m, layer_header)) return m[1];
  if (std::regex_search(line, common_header)) return "common";
  if (std::regex_search(line, m, private_header)) return m[1];
  return "";
}

TEST(RepositoryChecks, LayersIncludeOnlyLowerLayers) {
  std::vector<std::string> order = layer_order();
  ASSERT_GE(order.size(), 5u)
      << "docs/design.md lacks the line \"Layers, lowest first: `common` → ...\"";
  auto rank = [&](const std::string& layer) {
    auto it = std::find(order.begin(), order.end(), layer);
    return it == order.end() ? -1 : int(it - order.begin());
  };
  std::string violations;
  for (const auto& layer : order)  // the list names the tree's layers, no more
    if (layer != "common" && layer != "apps" && layer != "python" &&
        !fs::is_directory(source_dir() / "src" / layer) &&
        !fs::is_directory(source_dir() / "include/grafx" / layer))
      violations += "docs/design.md names a layer \"" + layer + "\" that has no folder\n";
  for (const auto& file : sources({"include", "src", "apps", "python/src"})) {
    std::string path = relative_path(file), from = layer_of_file(path);
    if (rank(from) < 0) {
      violations += path + ": layer \"" + from + "\" is not in docs/design.md's order\n";
      continue;
    }
    auto lines = lines_of(file);
    for (size_t i = 0; i < lines.size(); ++i) {
      std::string to = layer_of_include(lines[i]);
      if (to.empty() || rank(to) <= rank(from)) continue;
      violations += path + ":" + std::to_string(i + 1) + ": " + from + " includes " + to +
                    (rank(to) < 0 ? " (not a layer)" : " (a higher layer)") + ": " + lines[i] +
                    "\n";
    }
  }
  EXPECT_TRUE(violations.empty()) << violations;
}

TEST(RepositoryChecks, StreamLayerIsLibTorchFree) {
  // The real-time layer is linked into plugins and hosts without LibTorch (grafx::stream): no
  // file of it, nor any grafx header it reaches through its includes, may name LibTorch.
  static const std::regex grafx_header(R"(^\s*#\s*include\s*<(grafx/[^>]+)>)"),
      private_header(R"re(^\s*#\s*include\s*"(stream/[^"]+)")re"),
      libtorch(R"(^\s*#\s*include\s*[<"](torch|ATen|c10)/)");
  std::vector<fs::path> pending = sources({"include/grafx/stream", "src/stream"});
  ASSERT_FALSE(pending.empty()) << "the stream layer has no files";
  std::set<fs::path> seen(pending.begin(), pending.end());
  std::string violations;
  while (!pending.empty()) {
    fs::path file = pending.back();
    pending.pop_back();
    auto lines = lines_of(file);
    for (size_t i = 0; i < lines.size(); ++i) {
      std::smatch m;
      if (std::regex_search(lines[i], libtorch))
        violations += relative_path(file) + ":" + std::to_string(i + 1) + ": " + lines[i] + "\n";
      fs::path reached;
      if (std::regex_search(lines[i], m, grafx_header))
        reached = source_dir() / "include" / m[1].str();
      else if (std::regex_search(lines[i], m, private_header))
        reached = source_dir() / "src" / m[1].str();
      if (!reached.empty() && fs::exists(reached) && seen.insert(reached).second)
        pending.push_back(reached);
    }
  }
  EXPECT_TRUE(violations.empty()) << "the stream layer reaches LibTorch:\n" << violations;
}

TEST(RepositoryChecks, ErrorCatalogueListsExactlyTheCodesThrown) {
  // Codes are three-part literals "grafx.<layer>.<what>". Any such literal counts, not only
  // those inside an Error constructor, because codes also reach errors through helpers (`fail`
  // lambdas, Graph::validate's issues). Two-part literals ("grafx.graph", "grafx.checkpoint",
  // "grafx.parameters") name file formats and do not match. A three-part literal that is not a
  // code goes into kNotCodes; there is none today.
  const std::set<std::string> kNotCodes = {};
  std::regex comment(R"(^\s*(//|\*|#))");
  std::regex code(R"re("(grafx\.[a-z0-9_]+\.[a-z0-9_]+)")re");
  std::map<std::string, std::string> thrown;  // code -> first file:line
  // The Python package raises codes of its own too (grafx.dataset), and the benchmark programs
  // end as the grafx program does (grafx.cli.device).
  for (const auto& file :
       sources({"src", "apps", "bench", "python/src", "python/grafx"}, {".h", ".cpp", ".py"})) {
    auto lines = lines_of(file);
    for (size_t i = 0; i < lines.size(); ++i) {
      // A code quoted in a comment is not a use.
      if (std::regex_search(lines[i], comment)) continue;
      for (std::sregex_iterator it(lines[i].begin(), lines[i].end(), code), end; it != end; ++it)
        if (!kNotCodes.count((*it)[1]))
          thrown.emplace((*it)[1], relative_path(file) + ":" + std::to_string(i + 1));
    }
  }
  ASSERT_GT(thrown.size(), 30u) << "the scan found almost no codes: is the pattern right?";
  std::set<std::string> listed;
  std::regex listed_code(R"(`(grafx\.[a-z0-9_]+\.[a-z0-9_]+)`)");
  for (const auto& line : lines_of(source_dir() / "docs/errors.md"))
    if (line.rfind("|", 0) == 0)
      for (std::sregex_iterator it(line.begin(), line.end(), listed_code), end; it != end; ++it)
        listed.insert((*it)[1]);
  std::string missing, stale;
  for (const auto& [c, where] : thrown)
    if (!listed.count(c)) missing += "  " + c + " (" + where + ")\n";
  for (const auto& c : listed)
    if (!thrown.count(c)) stale += "  " + c + "\n";
  EXPECT_TRUE(missing.empty()) << "codes thrown but missing from docs/errors.md:\n" << missing;
  EXPECT_TRUE(stale.empty()) << "codes in docs/errors.md that nothing throws:\n" << stale;
}

}  // namespace

TEST(RepositoryChecks, NothingReadsOutsideTheRepository) {
  // Developers and CI have a folder beside the clone that users do not: no test, benchmark,
  // script, build file, document or source may name it, so a plain clone passes its own tests.
  // The name is assembled, so that this file does not name it.
  const std::string outside        = std::string("..") + "/shared",
                    data           = std::string("shared") + "/testdata";
  const std::set<std::string> text = {".h",  ".cpp",  ".py", ".sh",   ".txt", ".cmake",
                                      ".md", ".json", ".in", ".toml", ".cfg", ""};
  std::string found;
  for (auto it = fs::recursive_directory_iterator(source_dir()); it != fs::end(it); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name == ".git" || name.rfind("build", 0) == 0 ||
                               name == "__pycache__" || name == "demo-output")) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || !text.count(it->path().extension().string())) continue;
    auto lines = lines_of(it->path());
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].find(outside) != std::string::npos || lines[i].find(data) != std::string::npos)
        found += relative_path(it->path()) + ":" + std::to_string(i + 1) + ": " + lines[i] + "\n";
  }
  EXPECT_TRUE(found.empty()) << "these lines name a folder outside the repository:\n" << found;
}
