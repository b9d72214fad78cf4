#pragma once
// One measured point of a sweep and how it becomes a CSV row or a JSON object (DESIGN.md section
// 7's schema).
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "hydragen/problem.hpp"
#include "hydragen/sharing_rates.hpp"
#include "hydragen/tree_spec.hpp"

namespace hydragen::sweep {

// One problem: B sequences under a prefix of P tokens, each with its own S (tree_spec.hpp: levels of
// groups between them, or none, or nothing shared at all); or the tree detect_sharing finds in a file
// of token ids, one sequence a line (then B is its sequences, P and S are 0).
struct ShapePoint {
  DType dtype = DType::bf16;
  int batch = 0, prefix = 0, suffix = 0, q_len = 1, q_heads = 8, kv_heads = 1, head_dim = 128;
  TreeSpec tree = {};
  std::string tokens = {};  // the token-id file, or empty

  SharingTree sharing_tree(const SharingRates& rates) const;  // detect_sharing's at `rates` for a token file
  std::string tree_text() const;  // the CSV's tree column: tree.text(), or "tokens:FILE"
};

struct Point {
  std::string backend;
  Storage storage = Storage::shared;
  ShapePoint shape;
  PlanOptions options = {};  // the backend's plan options, e.g. form=wide

  std::string label() const { return BackendChoice{backend, storage, false, options}.label(); }  // the CSV's backend column
};

struct Measurement {
  std::string status = "ok";  // ok | oom | unsupported | error
  std::string detail;         // why, when not ok
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double flops = 0, bytes = 0;  // the cost model's FLOPs and floor bytes of the point
  double floor_ms = 0;          // max(FLOPs / peak, bytes / peak), the measured peaks: the attainable floor; 0 when none
  double nominal_ms = 0;        // the same at the device's nominal peaks (the physical limit); 0 when not in the table
  std::string decisions;        // the plan's decisions, "rule=choice;..." (decisions_cell); empty for a plan that makes none
  std::string explanation;      // the same, one rule a line with its reason and inputs (explain): --explain's file, no column
};

// Column names and values, in the schema's order; empty strings where a value does not apply.
struct Row {
  std::string device, commit;
  Point point;
  Measurement m;
};

void write_csv_header(std::ostream& out);
void write_csv_row(std::ostream& out, const Row& row);
nlohmann::json to_json(const Row& row);
// A row as JSON from its CSV fields (columns and values in the same order): text columns as strings,
// the others as numbers, an empty value as null. to_json(row) is this of the row's fields, so rows read
// back from a CSV (csv_rows.hpp) give the same objects. Throws std::invalid_argument naming the column
// of a value that should be a number and is not.
nlohmann::json to_json(const std::vector<std::string>& columns, const std::vector<std::string>& values);

}  // namespace hydragen::sweep
