#include "csv_rows.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "csv/csv_records.hpp"

namespace hydragen::sweep {

namespace {

using csv::fail;
using csv::joined;
using csv::split_records;

}  // namespace

const CsvRecord& csv_columns() {
  static const CsvRecord columns = [] {
    std::ostringstream header;
    write_csv_header(header);
    return split_records(header.str()).front().fields;
  }();
  return columns;
}

std::size_t csv_column(std::string_view name) {
  const CsvRecord& columns = csv_columns();
  const auto it = std::find(columns.begin(), columns.end(), name);
  if (it == columns.end()) throw std::out_of_range("the sweep's CSV has no column " + std::string(name));
  return static_cast<std::size_t>(it - columns.begin());
}

CsvRecord csv_record(const Row& row) {
  std::ostringstream text;
  write_csv_row(text, row);
  return split_records(text.str()).front().fields;
}

std::vector<CsvRecord> parse_sweep_csv(std::string_view text) {
  std::vector<csv::Record> lines = split_records(text);
  if (lines.empty()) return {};
  if (lines.front().fields != csv_columns()) {
    fail(1, "not hydragen-sweep's CSV header (" + joined(csv_columns()) + ")");
  }
  std::vector<CsvRecord> rows;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    csv::Record& row = lines[i];
    if (row.fields.size() != csv_columns().size()) {
      fail(row.line,
           std::to_string(row.fields.size()) + " fields, the header has " + std::to_string(csv_columns().size()));
    }
    try {
      to_json(csv_columns(), row.fields);  // the numbers --json will need
    } catch (const std::invalid_argument& e) {
      fail(row.line, e.what());
    }
    rows.push_back(std::move(row.fields));
  }
  return rows;
}

}  // namespace hydragen::sweep
