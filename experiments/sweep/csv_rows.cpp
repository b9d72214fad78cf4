#include "csv_rows.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace hydragen::sweep {

namespace {

struct Line {
  int number;  // where the record starts (a quoted line break makes a record span lines)
  CsvRecord fields;
};

[[noreturn]] void fail(int line, const std::string& why) {
  throw std::invalid_argument("line " + std::to_string(line) + ": " + why);
}

// RFC 4180 as point.cpp writes it: a field is quoted from its first character to a quote that is
// not doubled, and only a comma or a line break may follow that quote.
std::vector<Line> split_records(std::string_view text) {
  std::vector<Line> records;
  Line record{1, {}};
  std::string field;
  int line = 1;
  bool quoted = false, closed = false, fresh = true;  // in quotes; just after them; at a field's start
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (quoted) {
      if (c != '"') {
        field += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
        closed = true;
      }
    } else if (c == ',' || c == '\n') {
      record.fields.push_back(std::move(field));
      field.clear();
      closed = false;
      fresh = true;
      if (c == '\n') {
        records.push_back(std::move(record));
        record = Line{line, {}};
      }
      continue;
    } else if (closed) {
      fail(line, "'" + std::string(1, c) + "' after a closing quote (a field that is quoted ends at its quote)");
    } else if (c == '"') {
      if (!fresh) fail(line, "a quote inside an unquoted field");
      quoted = true;
    } else {
      field += c;
    }
    fresh = false;
  }
  if (quoted) fail(record.number, "a quote that is never closed");
  if (fresh && record.fields.empty()) return records;
  fail(record.number, "no line break at its end (a row cut off mid-write)");
}

std::string joined(const CsvRecord& fields) {
  std::string out;
  for (const std::string& f : fields) out += (out.empty() ? "" : ",") + f;
  return out;
}

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
  std::vector<Line> lines = split_records(text);
  if (lines.empty()) return {};
  if (lines.front().fields != csv_columns()) {
    fail(1, "not hydragen-sweep's CSV header (" + joined(csv_columns()) + ")");
  }
  std::vector<CsvRecord> rows;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    Line& row = lines[i];
    if (row.fields.size() != csv_columns().size()) {
      fail(row.number,
           std::to_string(row.fields.size()) + " fields, the header has " + std::to_string(csv_columns().size()));
    }
    try {
      to_json(csv_columns(), row.fields);  // the numbers --json will need
    } catch (const std::invalid_argument& e) {
      fail(row.number, e.what());
    }
    rows.push_back(std::move(row.fields));
  }
  return rows;
}

}  // namespace hydragen::sweep
