#pragma once
// Reading back hydragen-sweep's own CSV (point.hpp writes it): the rows --resume keeps and the rows
// --json is rebuilt from.
#include <string>
#include <string_view>
#include <vector>

#include "point.hpp"

namespace hydragen::sweep {

using CsvRecord = std::vector<std::string>;  // one row's fields, in the header's order, unquoted

// write_csv_header's columns, and the index of one of them (std::out_of_range for another name).
const CsvRecord& csv_columns();
std::size_t csv_column(std::string_view name);

// The fields write_csv_row writes for the row.
CsvRecord csv_record(const Row& row);

// The rows of a sweep's CSV text: none for empty text; otherwise its first line must be
// write_csv_header's and every row as write_csv_row writes it (a quoted field may hold commas, line
// breaks and doubled quotes; every row ends with a line break; numbers where to_json wants them).
// Throws std::invalid_argument naming the line otherwise, e.g. a last row cut off mid-write.
std::vector<CsvRecord> parse_sweep_csv(std::string_view text);

}  // namespace hydragen::sweep
