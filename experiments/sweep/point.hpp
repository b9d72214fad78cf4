#pragma once
// One measured point of a sweep and how it becomes a CSV row (DESIGN.md section 7's schema).
#include <ostream>
#include <string>

#include "hydragen/problem.hpp"

namespace hydragen::sweep {

struct Point {
  std::string backend;
  Storage storage = Storage::shared;
  DType dtype = DType::bf16;
  int batch = 0, prefix = 0, suffix = 0, q_len = 1, q_heads = 8, kv_heads = 1, head_dim = 128;
};

struct Measurement {
  std::string status = "ok";  // ok | oom | unsupported | error
  std::string detail;         // why, when not ok
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double flops = 0, bytes = 0;  // the cost model's FLOPs and floor bytes of the point
  double floor_ms = 0;          // max(FLOPs / peak, bytes / peak); 0 when no peaks are known
};

void write_csv_header(std::ostream& out);
void write_csv_row(std::ostream& out, const std::string& device, const std::string& commit, const Point& p,
                   const Measurement& m);

}  // namespace hydragen::sweep
