#pragma once
// Pieces of the HTML reports and their pictures (private to the report layer).

#include <grafx/files.h>
#include <grafx/graph/graph.h>
#include <grafx/io/draw.h>
#include <grafx/loss/mix_loss.h>

#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace grafx::detail {

inline std::string base64(const std::string& bytes) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 |
                 uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += table[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 |
                 (i + 1 < bytes.size() ? uint32_t(uint8_t(bytes[i + 1])) << 8 : 0);
    out += table[(v >> 18) & 63];
    out += table[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? table[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

inline std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

inline std::string fixed(double value, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << value;
  return s.str();
}

/// The start of a report page: the head with its style, and the title as heading.
inline std::string page_start(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
         escape(title) +
         "</title>\n<style>body{font-family:Helvetica,Arial,sans-serif;max-width:980px;margin:2em "
         "auto;color:#222}"
         "h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}table{border-collapse:collapse}"
         "td,th{padding:2px 10px;text-align:right;border-bottom:1px solid "
         "#ddd}td:first-child,th:first-child"
         "{text-align:left}.pictures img{width:100%;height:280px;image-rendering:pixelated}.facts "
         "td{text-align:left}.graph svg{max-width:100%;height:auto}"
         "figure{margin:0 0 1em "
         "0}figcaption{font-size:.9em;color:#555}pre{font-size:.8em;overflow:auto}</style>"
         "</head><body>\n<h1>" +
         escape(title) + "</h1>\n";
}

/// A table of whole-song losses with their L/R, mid and side parts, one row per labelled set.
inline std::string loss_table(const std::vector<std::pair<std::string, MixLossTerms>>& rows) {
  std::string html =
      "<table><tr><th></th><th>loss</th><th>L/R</th><th>mid</th><th>side</th></tr>\n";
  for (const auto& [label, t] : rows)
    html += "<tr><td>" + label + "</td><td>" + fixed(t.total.item<double>(), 4) + "</td><td>" +
            fixed(t.lr.item<double>(), 4) + "</td><td>" + fixed(t.mid.item<double>(), 4) +
            "</td><td>" + fixed(t.side.item<double>(), 4) + "</td></tr>\n";
  return html + "</table>\n";
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
