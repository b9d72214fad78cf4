#pragma once
// The end-to-end runs of hydragen-decode that reproduce the paper (issue: end-to-end decoding):
// each preset is a list of points, one CSV row each.
#include <string>
#include <string_view>
#include <vector>

#include "decode/decoder.hpp"

namespace hydragen::decode {

struct DecodePoint {
  std::string model;     // a model_config() name
  int layers = 0;        // 0: all of the model's
  int tp = 1;            // the model is split N ways; this process runs one shard
  Mode mode = Mode::hydragen;
  int batch = 1;         // B
  int prompt_len = 0;    // P: the shared prefix
  int question_len = 0;  // each sequence's own tokens after the prefix, entering in one step (Fig. 5)
  int gen_tokens = 0;    // greedy decode steps after that
  // Sharing below the prompt, one level as hydragen-sweep --tree writes it: "8x300-800", 8 groups of
  // B / 8 sequences, each group's tokens (300 to 800 of them) shared by its sequences, or
  // "copy:8x300-800", the same tokens copied into every sequence (the prompt alone shared). Empty:
  // none. The paper's Fig. 6: a problem's description shared by its samples.
  std::string groups;
};

// fig3a: CodeLlama-13b over TP 8, P = 2048, 128 tokens, B from 1 to 4096 (the paper's Fig. 3a;
// memory decides where each mode stops). fig3b: the same at B = 1024, P from 1024 to 16256.
// tables: Appendix C.1's Tables 1-6 (7b, 13b, 34b; 128 and 256 tokens; their B and P).
// fig5: Yi-6B-200k over TP 4, a 19947-token document, 1 to 1024 questions of 16 tokens each
// answered in 8. smoke: the smoke model, seconds on a CPU. Every mode at every point, except that
// no-attention, which does not depend on P, runs at each B once (at the smallest P).
// Throws std::invalid_argument listing the presets for another name.
std::vector<DecodePoint> preset_points(std::string_view name);
std::vector<std::string> preset_names();

}  // namespace hydragen::decode
