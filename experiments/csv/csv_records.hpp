#pragma once
// Reading back the tools' own CSV files (hydragen-sweep's and hydragen-decode's, for --resume and
// --json): RFC 4180 as they write it. Header only.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hydragen::csv {

struct Record {
  int line = 1;                     // where the record starts (a quoted line break makes it span lines)
  std::vector<std::string> fields;  // unquoted
};

[[noreturn]] inline void fail(int line, const std::string& why) {
  throw std::invalid_argument("line " + std::to_string(line) + ": " + why);
}

// The records of `text`: a field is quoted from its first character to a quote that is not doubled,
// and only a comma or a line break may follow that quote; every record ends with a line break.
// Throws std::invalid_argument naming the line otherwise (e.g. a last row cut off mid-write).
inline std::vector<Record> split_records(std::string_view text) {
  std::vector<Record> records;
  Record record;
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
        record = Record{line, {}};
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
  if (quoted) fail(record.line, "a quote that is never closed");
  if (fresh && record.fields.empty()) return records;
  fail(record.line, "no line break at its end (a row cut off mid-write)");
}

// The fields joined by commas, unquoted (for messages).
inline std::string joined(const std::vector<std::string>& fields) {
  std::string out;
  for (const std::string& f : fields) out += (out.empty() ? "" : ",") + f;
  return out;
}

}  // namespace hydragen::csv
