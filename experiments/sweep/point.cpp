#include "point.hpp"

#include <cstdio>

namespace hydragen::sweep {

namespace {
std::string number(double value, const char* format = "%.6g") {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}
// CSV-safe: device names carry no commas, but a detail message might.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
}  // namespace

void write_csv_header(std::ostream& out) {
  out << "device,commit,backend,storage,dtype,B,P,S,q_len,Hq,Hkv,D,median_ms,min_ms,max_ms,tflops,gbps,floor_ms,"
         "time_over_floor,status,detail\n";
}

void write_csv_row(std::ostream& out, const std::string& device, const std::string& commit, const Point& p,
                   const Measurement& m) {
  const bool ok = m.status == "ok";
  const bool floored = ok && m.floor_ms > 0;
  out << quoted(device) << ',' << commit << ',' << p.backend << ',' << storage_name(p.storage) << ','
      << dtype_name(p.dtype) << ',' << p.batch << ',' << p.prefix << ',' << p.suffix << ',' << p.q_len << ','
      << p.q_heads << ',' << p.kv_heads << ',' << p.head_dim << ',' << (ok ? number(m.median_ms) : "") << ','
      << (ok ? number(m.min_ms) : "") << ',' << (ok ? number(m.max_ms) : "") << ','
      << (ok ? number(m.flops / (m.median_ms * 1e-3) * 1e-12) : "") << ','
      << (ok ? number(m.bytes / (m.median_ms * 1e-3) * 1e-9) : "") << ',' << (floored ? number(m.floor_ms) : "") << ','
      << (floored ? number(m.median_ms / m.floor_ms, "%.3f") : "") << ',' << m.status << ',' << quoted(m.detail)
      << '\n';
}

}  // namespace hydragen::sweep
