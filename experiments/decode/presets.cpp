#include "decode/presets.hpp"

#include <stdexcept>
#include <utility>

namespace hydragen::decode {

namespace {

constexpr Mode kModes[] = {Mode::flash, Mode::paged, Mode::hydragen, Mode::no_attention};

// Every mode at every (B, P); no-attention once per B.
void add_grid(std::vector<DecodePoint>& out, const DecodePoint& base, const std::vector<int>& batches,
              const std::vector<int>& prefixes) {
  for (int b : batches) {
    for (Mode mode : kModes) {
      for (int p : prefixes) {
        DecodePoint point = base;
        point.mode = mode;
        point.batch = b;
        point.prompt_len = p;
        out.push_back(point);
        if (mode == Mode::no_attention) break;
      }
    }
  }
}

// Tables 1-6: batches per table as the paper lists them (paper_data/hydragen_e2e_tables.csv); the
// "16K" column is 16256 tokens with 128 generated, 16128 with 256 (16384 positions in all).
void add_tables(std::vector<DecodePoint>& out) {
  struct Table {
    const char* model;
    int gen;
    std::vector<int> batches;
  };
  const Table tables[] = {{"codellama-7b", 128, {32, 64, 128, 256, 512, 1024, 2048}},
                          {"codellama-7b", 256, {32, 64, 128, 256, 512, 1024}},
                          {"codellama-13b", 128, {32, 64, 128, 256, 512, 1024}},
                          {"codellama-13b", 256, {32, 64, 128, 256, 512}},
                          {"codellama-34b", 128, {32, 64, 128, 256, 512, 1024, 2048, 4096}},
                          {"codellama-34b", 256, {32, 64, 128, 256, 512, 1024, 2048}}};
  for (const Table& t : tables) {
    DecodePoint base;
    base.model = t.model;
    base.tp = 8;
    base.gen_tokens = t.gen;
    add_grid(out, base, t.batches, {1024, 2048, 4096, 8192, t.gen == 128 ? 16256 : 16128});
  }
}

}  // namespace

std::vector<std::string> preset_names() { return {"fig3a", "fig3b", "tables", "fig5", "fig6", "smoke"}; }

std::vector<DecodePoint> preset_points(std::string_view name) {
  std::vector<DecodePoint> out;
  DecodePoint base;
  if (name == "fig3a" || name == "fig3b") {
    base.model = "codellama-13b";
    base.tp = 8;
    base.gen_tokens = 128;
    if (name == "fig3a") {
      add_grid(out, base, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}, {2048});
    } else {
      add_grid(out, base, {1024}, {1024, 2048, 4096, 8192, 16256});
    }
  } else if (name == "tables") {
    add_tables(out);
  } else if (name == "fig5") {
    // Section 4.3 / Appendix D.3: the document and five few-shot examples are the 19947-token
    // prefix; a question ("What color is the fur of the dog named ...?") is about 16 tokens, its
    // answer (a color) a few.
    base.model = "yi-6b-200k";
    base.tp = 4;
    base.question_len = 16;
    base.gen_tokens = 8;
    add_grid(out, base, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}, {19947});
  } else if (name == "fig6") {
    // Section 4.4 / Appendix D.4: CodeLlama-7b, a 2400-token two-shot prompt, APPS problems of 128
    // sampled programs of 512 tokens each; 1 to 16 problems per batch, each problem's description
    // (300 to 800 tokens here) shared by its samples (two-level) or copied into each (single-level);
    // and flat attention over the same pages as two-level (paged: the prompt's and descriptions' KV
    // stored once, read by every sample).
    base.model = "codellama-7b";
    base.tp = 8;
    base.prompt_len = 2400;
    base.gen_tokens = 512;
    for (int problems : {1, 2, 4, 8, 16}) {
      const std::string groups = std::to_string(problems) + "x300-800";
      for (const auto& [mode, form] : {std::pair{Mode::hydragen, ""}, std::pair{Mode::hydragen, "copy:"}, std::pair{Mode::paged, ""}}) {
        DecodePoint point = base;
        point.mode = mode;
        point.batch = 128 * problems;
        point.groups = form + groups;
        out.push_back(point);
      }
    }
  } else if (name == "smoke") {
    base.model = "smoke";
    base.question_len = 4;
    base.gen_tokens = 16;
    add_grid(out, base, {1, 8}, {32, 128});
  } else {
    std::string known;
    for (const std::string& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown preset '" + std::string(name) + "' (known: " + known + ")");
  }
  return out;
}

}  // namespace hydragen::decode
