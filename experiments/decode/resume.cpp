#include "decode/resume.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "csv/csv_records.hpp"
#include "decode/decoder.hpp"
#include "decode/measure.hpp"
#include "decode/model_config.hpp"

namespace hydragen::decode {

namespace {

constexpr const char* kKeyColumns[] = {"model", "layers", "tp", "gpus", "mode", "backend", "B",
                                        "P", "question_len", "groups", "gen_tokens"};

std::string key_of(const std::vector<std::string>& values) {
  std::string key;
  for (const std::string& v : values) key += v + ',';
  return key;
}

}  // namespace

std::string point_key(const DecodePoint& point, int gpus, const std::string& backend) {
  const int layers = point.layers > 0 ? point.layers : model_config(point.model).layers;
  return key_of({point.model, std::to_string(layers), std::to_string(point.tp), std::to_string(gpus),
                 std::string(mode_name(point.mode)), backend, std::to_string(point.batch), std::to_string(point.prompt_len),
                 std::to_string(point.question_len), point.groups, std::to_string(point.gen_tokens)});
}

Resumed read_resumed(std::string_view text, const std::string& device, const std::string& commit) {
  const std::vector<csv::Record> records = csv::split_records(text);
  if (records.empty()) return {};
  const std::vector<std::string> header = csv::split_records(decode_csv_header()).front().fields;
  if (records.front().fields != header) csv::fail(1, "not hydragen-decode's CSV header (" + csv::joined(header) + ")");
  auto column = [&](std::string_view name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  Resumed resumed;
  resumed.has_header = true;
  for (std::size_t i = 1; i < records.size(); ++i) {
    const csv::Record& row = records[i];
    if (row.fields.size() != header.size()) {
      csv::fail(row.line, std::to_string(row.fields.size()) + " fields, the header has " + std::to_string(header.size()));
    }
    if (row.fields[column("device")] != device || row.fields[column("commit")] != commit) {
      ++resumed.elsewhere;
      continue;
    }
    std::vector<std::string> values;
    for (const char* name : kKeyColumns) values.push_back(row.fields[column(name)]);
    resumed.done.insert(key_of(values));
  }
  return resumed;
}

}  // namespace hydragen::decode
