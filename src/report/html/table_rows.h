// The rows of a large sortable table (the profile page's op table, the diff page's node table),
// kept as data so that each renders either as HTML or as JSON from the same values.
//
// A page with thousands of rows as HTML takes seconds to open (parsing, style and layout of every
// cell; 5.4 s for 5,000 ops, docs/benchmarks.md). So a table holds its first kInitialUnits units
// (a row, or a fused step's row with its source nodes' rows) as HTML, in the page's default
// order, and the rest as one JSON block, <script type="application/json" id="TABLE-data">, which
// the browser does not execute (no hash in the policy is needed) and page.js parses the first time
// a reader scrolls near the end of the table, sorts, filters or follows a link to a row that is
// not in the page yet. Without JavaScript a <noscript> note says how many rows are shown and how
// to get the whole table.
#pragma once

#include <string>
#include <vector>

#include "report/html/html_page.h"

namespace opscope::report::html {

inline constexpr size_t kInitialUnits = 200;

struct Cell {
  enum Kind { kText, kNum, kName, kSpark } kind = kText;
  std::string cls;      // kText: the cell's class ("mono", "bad"), if any
  double v = 0;         // kNum, kSpark: the sort key (data-v)
  bool has_v = true;    // kSpark: false for a sparkline that is not a sort key
  std::string text;     // the shown text, unescaped (kSpark: the hover text)
  SparkGeometry spark;  // kSpark
};

// One <tr>: a single row, a fused step (kind "group", with `group` its id) or a step's source
// node (kind "child", with `parent` the step's group id).
struct Row {
  std::string id, kind, group, parent, name_attr, type_attr;
  int op = -1;  // data-op, -1 for none
  std::vector<Cell> cells;
};

Cell TextCell(std::string text, std::string cls = "");
Cell NumCell(double v, std::string text);
Cell SparkCell(const std::vector<double>& runs, std::string title, bool sort_key, double v = 0);

// The <tr> of a row.
std::string RowHtml(const Row& r);
// Its JSON twin, read by page.js (buildRow): {"id","k","g","p","op","n","t","c":[...]} where a
// cell is "text", {"x":"text","c":"class"}, [sort key, "text"] (numeric), {"name":"text"}, or
// {"s":1,"v":sort key,"x":"hover text","m":median y,"y":[y per run]} (sparkline; "v", "m" and "y"
// optional).
std::string RowJson(const Row& r);

// A table's rows split as described above: `body` goes inside its <tbody>, `after` right after
// the </table> (the JSON block, the "more rows" line and the <noscript> note; empty when every
// row is in `body`). `whole_table_html` ends the note: how to get every row without a browser.
struct TableRows {
  std::string body, after;
  size_t html_rows = 0, rows = 0;
};
TableRows RenderTableRows(const std::string& table_id, const std::vector<std::vector<Row>>& units,
                          const std::string& order_words, const std::string& whole_table_html);

}  // namespace opscope::report::html
