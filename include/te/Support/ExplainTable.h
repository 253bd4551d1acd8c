//===- ExplainTable.h - The "which backend lowers each op" table -*- C++
//-*-===//
//
// te-run --explain, te-opt --te-explain-dispatch and te_mlir.format_explain
// print one table: a row per te op with the columns of kExplainColumns,
// each padded to its widest cell and two spaces apart (the last one not
// padded). The backend is "plugin P/provider", "<target> (native)" or
// "none: <why>"; the notes are the providers that declined ("P/provider:
// reason") and a fallback ("fallback: ..."), joined by "; ", with "-" for
// none. Header-only and plain C++, for te-run (no MLIR) and the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef TE_SUPPORT_EXPLAINTABLE_H
#define TE_SUPPORT_EXPLAINTABLE_H

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace te::support {

/// One op: (op, location, backend, notes), notes empty when there are none.
using ExplainRow = std::array<std::string, 4>;

/// The headings of the four columns.
inline const ExplainRow &explainColumns() {
  static const ExplainRow columns = {"op", "location", "backend",
                                     "declined / notes"};
  return columns;
}

/// The table of `rows` under the headings, one line each, "\n"-terminated.
inline std::string formatExplainTable(const std::vector<ExplainRow> &rows) {
  std::vector<ExplainRow> table = {explainColumns()};
  for (ExplainRow row : rows) {
    if (row[3].empty())
      row[3] = "-";
    table.push_back(std::move(row));
  }
  size_t width[3] = {0, 0, 0};
  for (const ExplainRow &row : table)
    for (int i = 0; i < 3; ++i)
      width[i] = std::max(width[i], row[i].size());
  std::string text;
  for (const ExplainRow &row : table) {
    for (int i = 0; i < 3; ++i)
      text += row[i] + std::string(width[i] - row[i].size() + 2, ' ');
    text += row[3] + "\n";
  }
  return text;
}

} // namespace te::support

#endif // TE_SUPPORT_EXPLAINTABLE_H
