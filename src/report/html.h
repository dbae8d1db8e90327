#pragma once
// Pieces of the HTML reports and their pictures (private to the report layer).

#include <grafx/files.h>
#include <grafx/graph/graph.h>
#include <grafx/io/draw.h>
#include <grafx/io/image.h>
#include <grafx/loss/mix_loss.h>
#include <grafx/processors/registry.h>
#include <grafx/text.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace grafx::detail {

/// The start of a report page: the head with its style, and the title as heading.
inline std::string page_start(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
         escape_markup(title) +
         "</title>\n<style>"
         "body{font-family:Helvetica,Arial,sans-serif;max-width:1200px;margin:2em auto;"
         "padding:0 1em;color:#222}"
         "h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}"
         "h3{font-size:1em;margin:1.2em 0 .4em}table{border-collapse:collapse}"
         "td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #ddd}"
         "td:first-child,th:first-child{text-align:left}.facts td{text-align:left}"
         ".graph svg{max-width:100%;height:auto}svg{max-width:100%;height:auto}"
         "figure{margin:0 0 1em 0}figcaption{font-size:.9em;color:#555}"
         "pre{font-size:.8em;overflow:auto}"
         ".players{display:flex;flex-wrap:wrap;gap:4px 24px}.players figure{margin:0 0 .5em 0}"
         ".players audio{display:block;width:300px;height:36px}"
         ".strip{display:flex;flex-wrap:wrap;gap:8px 20px;align-items:flex-start}"
         ".strip .curves{flex:0 0 400px}.strip .curves svg{width:400px;height:auto}"
         ".strip table{flex:1 1 560px;font-size:.88em}.settings td{white-space:nowrap}"
         ".settings td.setting{text-align:left}.settings "
         "td.node{text-align:left;white-space:nowrap}"
         ".settings td.error{color:#555}"
         ".letter{display:inline-block;width:1.3em;text-align:center;border:1px solid #444;"
         "border-radius:3px;font-weight:bold;margin-right:.35em}"
         ".legend{columns:2;list-style:none;padding:0;font-size:.9em}.legend li{margin:2px 0}"
         ".note{color:#555;font-size:.9em}"
         ".pictures{display:flex;flex-wrap:wrap;gap:8px 20px}.pictures svg{width:480px}"
         "</style></head><body>\n<h1>" +
         escape_markup(title) + "</h1>\n";
}

/// A node type's letter in its colour, as in the console pictures.
inline std::string letter_box(const NodeType& type) {
  return "<span class=\"letter\" style=\"background:" + type_color(type) + "\">" +
         escape_markup(std::string(1, type_letter(type))) + "</span>";
}

/// A path as the relative URL of a link from a page in `folder`: percent-encoded, with
/// "/" separators ("tracks/lead%20vocal.wav", "../song.wav").
inline std::string relative_link(const std::string& folder, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path from = fs::absolute(folder, ec).lexically_normal();
  fs::path to   = fs::absolute(path, ec).lexically_normal();
  fs::path link = to.lexically_relative(from);
  if (link.empty()) link = to;  // no relative way there (another root): the absolute path
  std::string text       = link.generic_string(), url;
  static const char* hex = "0123456789ABCDEF";
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      url += char(c);
    } else {
      url += '%';
      url += hex[c >> 4];
      url += hex[c & 15];
    }
  }
  return url;
}

/// An HTML5 audio player of a file linked by `url` (relative to the page), with its label.
inline std::string audio_player(const std::string& label, const std::string& url) {
  return "<figure><figcaption>" + escape_markup(label) + " (<a href=\"" + escape_markup(url) +
         "\">" + escape_markup(url) +
         "</a>)</figcaption><audio controls preload=\"metadata\" src=\"" + escape_markup(url) +
         "\"></audio></figure>";
}

/// A table of whole-song losses with their L/R, mid and side parts, one row per labelled set.
inline std::string loss_table(const std::vector<std::pair<std::string, MixLossTerms>>& rows) {
  std::string html =
      "<table><tr><th></th><th>loss</th><th>L/R</th><th>mid</th><th>side</th></tr>\n";
  for (const auto& [label, t] : rows)
    html += "<tr><td>" + label + "</td><td>" + fixed_decimals(t.total.item<double>(), 4) +
            "</td><td>" + fixed_decimals(t.lr.item<double>(), 4) + "</td><td>" +
            fixed_decimals(t.mid.item<double>(), 4) + "</td><td>" +
            fixed_decimals(t.side.item<double>(), 4) + "</td></tr>\n";
  return html + "</table>\n";
}

/// A whole-song loss and its parts as a JSON object (the folders' summary.json); a non-finite
/// value as null, so that the file stays valid JSON.
inline std::string loss_json(const MixLossTerms& t) {
  auto number = [](double x) {
    return std::isfinite(x) ? significant_digits(x, 10) : std::string("null");
  };
  return "{\"loss\": " + number(t.total.item<double>()) +
         ", \"left_right\": " + number(t.lr.item<double>()) +
         ", \"mid\": " + number(t.mid.item<double>()) +
         ", \"side\": " + number(t.side.item<double>()) +
         ", \"spectral_difference_db\": " + number(spectral_difference_db(t)) + "}";
}

/// A console's picture (tracks, subgroups and buses boxed and named; bypassed nodes dashed), or
/// a note in its place when it has too many nodes to lay out in reasonable time.
inline void write_console_picture(const Graph& graph, const std::string& path, bool overwrite) {
  DrawOptions picture;
  picture.strips = true;
  if (graph.n_nodes() <= picture.max_nodes) {
    draw_graph(graph, path, picture, overwrite);
    return;
  }
  write_text_file(path,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"480\" height=\"30\">"
                  "<text x=\"4\" y=\"20\" font-family=\"Helvetica\" font-size=\"13\">" +
                      std::to_string(graph.n_nodes()) +
                      " nodes: too many to draw (grafx draw console.json --max-nodes N)</text>"
                      "</svg>\n",
                  overwrite);
}

/// An SVG file's text from its <svg> element on, to inline in a page.
inline std::string inline_svg(const std::string& text) {
  size_t start = text.find("<svg");
  return start == std::string::npos ? text : text.substr(start);
}

}  // namespace grafx::detail
