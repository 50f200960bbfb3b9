#include "report/html/table_rows.h"

#include <fmt/format.h>

namespace opscope::report::html {

Cell TextCell(std::string text, std::string cls) {
  Cell c;
  c.text = std::move(text);
  c.cls = std::move(cls);
  return c;
}

Cell NumCell(double v, std::string text) {
  Cell c;
  c.kind = Cell::kNum;
  c.v = v;
  c.text = std::move(text);
  return c;
}

Cell SparkCell(const std::vector<double>& runs, std::string title, bool sort_key, double v) {
  Cell c;
  c.kind = Cell::kSpark;
  c.has_v = sort_key;
  c.v = v;
  c.text = std::move(title);
  c.spark = SparkPoints(runs);
  return c;
}

std::string RowHtml(const Row& r) {
  std::string out = "<tr";
  if (!r.kind.empty()) out += " class=\"" + r.kind + "\"";
  if (!r.parent.empty()) out += " data-parent=\"" + r.parent + "\"";
  out += " id=\"" + r.id + "\"";
  if (!r.group.empty()) out += " data-group=\"" + r.group + "\"";
  if (r.op >= 0) out += fmt::format(" data-op=\"{}\"", r.op);
  out += " data-name=\"" + Escape(r.name_attr) + "\" data-type=\"" + Escape(r.type_attr) + "\">";
  for (const Cell& c : r.cells) {
    switch (c.kind) {
      case Cell::kText:
        out += Td(Escape(c.text), c.cls.empty() ? nullptr : c.cls.c_str());
        break;
      case Cell::kNum:
        out += TdNum(c.v, c.text);
        break;
      case Cell::kName:
        out += Td((r.kind == "group"   ? "<button type=\"button\" class=\"tog js-only\" "
                                         "aria-expanded=\"true\" aria-label=\"show the source "
                                         "nodes\"></button>"
                   : r.kind == "child" ? "↳ "
                                       : "") +
                      Escape(c.text),
                  "name");
        break;
      case Cell::kSpark: {
        const std::string svg = SparklineSvg(c.spark, c.text);
        out += (c.has_v ? "<td data-v=\"" + Num(c.v) + "\">" : std::string("<td>")) + svg + "</td>";
        break;
      }
    }
  }
  return out + "</tr>\n";
}

std::string RowJson(const Row& r) {
  std::string out = "{\"id\":" + JsonString(r.id);
  if (!r.kind.empty()) out += ",\"k\":" + JsonString(r.kind);
  if (!r.group.empty()) out += ",\"g\":" + JsonString(r.group);
  if (!r.parent.empty()) out += ",\"p\":" + JsonString(r.parent);
  if (r.op >= 0) out += fmt::format(",\"op\":{}", r.op);
  out += ",\"n\":" + JsonString(r.name_attr) + ",\"t\":" + JsonString(r.type_attr) + ",\"c\":[";
  for (size_t i = 0; i < r.cells.size(); ++i) {
    const Cell& c = r.cells[i];
    if (i) out += ',';
    switch (c.kind) {
      case Cell::kText:
        out += c.cls.empty() ? JsonString(c.text)
                             : "{\"x\":" + JsonString(c.text) + ",\"c\":" + JsonString(c.cls) + "}";
        break;
      case Cell::kNum:
        out += "[" + Num(c.v) + "," + JsonString(c.text) + "]";
        break;
      case Cell::kName:
        out += "{\"name\":" + JsonString(c.text) + "}";
        break;
      case Cell::kSpark:
        out += "{\"s\":1";
        if (c.has_v) out += ",\"v\":" + Num(c.v);
        out += ",\"x\":" + JsonString(c.text);
        if (!c.spark.ys.empty()) {
          out += ",\"m\":" + Num(c.spark.median_y, 1) + ",\"y\":[";
          for (size_t k = 0; k < c.spark.ys.size(); ++k)
            out += (k ? "," : "") + Num(c.spark.ys[k], 1);
          out += "]";
        }
        out += "}";
        break;
    }
  }
  return out + "]}";
}

TableRows RenderTableRows(const std::string& table_id, const std::vector<std::vector<Row>>& units,
                          const std::string& order_words, const std::string& whole_table_html) {
  TableRows t;
  const size_t html_units = std::min(units.size(), kInitialUnits);
  for (size_t u = 0; u < units.size(); ++u) {
    t.rows += units[u].size();
    if (u >= html_units) continue;
    for (const Row& r : units[u]) t.body += RowHtml(r);
    t.html_rows += units[u].size();
  }
  if (html_units == units.size()) return t;
  const size_t rest = t.rows - t.html_rows;
  t.after = "<script type=\"application/json\" id=\"" + table_id + "-data\">" +
            fmt::format("{{\"spark\":[{},{}],\"units\":[", Num(kSparkWidth), Num(kSparkHeight));
  for (size_t u = html_units; u < units.size(); ++u) {
    if (u > html_units) t.after += ",\n";
    t.after += "[";
    for (size_t k = 0; k < units[u].size(); ++k) t.after += (k ? "," : "") + RowJson(units[u][k]);
    t.after += "]";
  }
  t.after += "]}</script>\n";
  t.after += fmt::format(
      "<p class=\"js-only muted\" id=\"{}-more\"><span class=\"left\">{}</span> more rows are "
      "built as you scroll, sort or filter. <button type=\"button\" class=\"more\">show "
      "all</button></p>\n",
      table_id, rest);
  t.after += fmt::format(
      "<noscript><p class=\"note\" id=\"{}-noscript\">Only the first {} of the {} rows ({}) are "
      "shown here: the other {} are built by the page's script, which is disabled. For the whole "
      "table without a browser: {}</p></noscript>\n",
      table_id, t.html_rows, t.rows, order_words, rest, whole_table_html);
  return t;
}

}  // namespace opscope::report::html
