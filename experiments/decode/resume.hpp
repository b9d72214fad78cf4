#pragma once
// hydragen-decode --resume: the points a CSV it wrote already holds from this device at this commit,
// which a run skips (the other rows stay in the file, their points measured again), so that a long
// preset goes on across time-limited calls.
#include <cstddef>
#include <set>
#include <string>
#include <string_view>

#include "decode/presets.hpp"

namespace hydragen::decode {

// What identifies a point's row: model, layers (the model's own count when the point keeps them),
// tp, gpus, mode, the attention backend the row names ("none" in mode no-attention), B, P,
// question_len, groups and gen_tokens.
std::string point_key(const DecodePoint& point, int gpus, const std::string& backend);

struct Resumed {
  bool has_header = false;     // false: the file is empty or missing (a new file gets the header)
  std::set<std::string> done;  // point_key of every row from `device` at `commit`
  std::size_t elsewhere = 0;   // rows from another device or commit
};

// The rows of a hydragen-decode CSV's text (decode_csv_header's columns, rows as decode_csv_row
// writes them). Throws std::invalid_argument naming the line for other text: another header, a row
// with a different number of fields, a row cut off mid-write.
Resumed read_resumed(std::string_view text, const std::string& device, const std::string& commit);

}  // namespace hydragen::decode
