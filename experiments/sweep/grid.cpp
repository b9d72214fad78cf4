#include "grid.hpp"

#include <stdexcept>
#include <tuple>

namespace hydragen::sweep {

namespace {

std::vector<int> range(int first, int last, int step) {
  std::vector<int> v;
  for (int x = first; x <= last; x += step) v.push_back(x);
  return v;
}

std::vector<int> doubling(int first, int last) {
  std::vector<int> v;
  for (int x = first; x <= last; x *= 2) v.push_back(x);
  return v;
}

struct Preset {
  const char* name;
  const char* description;
  Grid (*make)();
};

// The paper's Figure 4 (microbenchmark): four (B, P) pairs, S from 0 to 512 in steps of 16.
Grid paper_fig4() {
  Grid g{{"cuda-flash:redundant", "cuda-flash:shared", "cuda-hydragen"}, {}};
  for (const auto& [b, p] : std::vector<std::pair<int, int>>{{512, 1024}, {1024, 2048}, {2048, 4096}, {4096, 8192}}) {
    for (int s : range(0, 512, 16)) g.shapes.push_back(ShapePoint{DType::bf16, b, p, s});
  }
  return g;
}

Grid full_grid() {
  return Grid{{"cuda-flash:redundant", "cuda-flash:shared", "cuda-hydragen"},
              product({DType::bf16}, doubling(32, 4096), {1024, 2048, 4096, 8192, 16384}, {0, 64, 128, 256, 512}, {1},
                      {8}, {1}, {128})};
}

// A CodeLlama-7B attention layer on one GPU: 32 heads of 128, no GQA.
Grid mha() {
  return Grid{{"cuda-flash:redundant", "cuda-flash:shared", "cuda-hydragen"},
              product({DType::bf16}, doubling(32, 256), {1024, 2048, 4096, 8192}, {64}, {1}, {32}, {32}, {128})};
}

// The other layers the performance issue tracks beside the CodeLlama-7B one: CodeLlama-13B
// (Hq = Hkv = 40), GQA g = 4 (Hq = 32, Hkv = 8) and D = 64 (Hq = Hkv = 32).
Grid models() {
  Grid g{{"cuda-flash:redundant", "cuda-flash:shared", "cuda-hydragen"}, {}};
  for (const auto& [hq, hkv, d] : std::vector<std::tuple<int, int, int>>{{40, 40, 128}, {32, 8, 128}, {32, 32, 64}}) {
    for (const ShapePoint& s : product({DType::bf16}, {64, 256}, {2048, 8192}, {64}, {1}, {hq}, {hkv}, {d})) {
      g.shapes.push_back(s);
    }
  }
  return g;
}

// Several queries per sequence (speculative decoding, a prefill chunk after a shared prompt): the
// prefix's reads are shared by q_len * B * g query rows per KV head.
Grid spec() {
  return Grid{{"cuda-flash:redundant", "cuda-flash:shared", "cuda-hydragen"},
              product({DType::bf16}, {64, 256, 1024}, {4096, 8192, 16384}, {64}, {2, 4, 8}, {8}, {1}, {128})};
}

// The CPU backends, sized to finish in about a minute on 2 cores: MHA (the prefix re-read from
// memory by flat) and GQA g = 8 (flat already packs the heads).
Grid cpu() {
  Grid g{{"cpu-flat:shared", "cpu-hydragen"}, {}};
  for (int kv_heads : {8, 1}) {
    for (const ShapePoint& s : product({DType::fp32}, {16, 64}, {1024, 4096, 16384}, {64}, {1}, {8}, {kv_heads}, {128})) {
      g.shapes.push_back(s);
    }
  }
  return g;
}

// The three CUDA methods and the batched-GEMM form of Hydragen between them.
Grid quick() {
  return Grid{{"cuda-flash:redundant", "cuda-flash:shared", "cuda-hydragen-cublas", "cuda-hydragen"},
              product({DType::bf16}, {32, 1024}, {1024, 16384}, {64}, {1}, {8}, {1}, {128})};
}

// Sharing at more than one level (issue 19): the prefix shared by all, then groups sharing more, at
// depth 3 (16x1024: 16 groups, each adding 1024 tokens) and 4 (4x1024/4x256); beside each, the
// same sequences with only the prefix shared, the groups' tokens copied into every suffix.
Grid trees() {
  std::vector<TreeSpec> specs;
  for (const char* text : {"16x1024", "copy:16x1024", "4x1024/4x256", "copy:4x1024/4x256"}) specs.push_back(TreeSpec::parse(text));
  return Grid{{"cuda-flash:shared", "cuda-hydragen"}, product({DType::bf16}, {256, 1024}, {4096}, {64}, {1}, {8}, {1}, {128}, specs)};
}

// The paper's Fig. 6 at the attention level: APPS problems with a 2400-token two-shot prompt shared
// by all, each problem's description (300 to 800 tokens) shared by its 128 samples, 512 tokens
// generated (S = 1, 256, 512 along the way); 1 to 16 problems per batch; two-level sharing beside
// single-level (the descriptions copied into every sample). CodeLlama-7b's TP-8 shard: 4 heads.
Grid fig6() {
  Grid g{{"cuda-flash:shared", "cuda-hydragen"}, {}};
  for (int problems : {1, 2, 4, 8, 16}) {
    const std::string groups = std::to_string(problems) + "x300-800";
    for (const ShapePoint& s : product({DType::bf16}, {128 * problems}, {2400}, {1, 256, 512}, {1}, {4}, {4}, {128},
                                       {TreeSpec::parse(groups), TreeSpec::parse("copy:" + groups)})) {
      g.shapes.push_back(s);
    }
  }
  return g;
}

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"paper-fig4", "the paper's Fig. 4: (B,P) in (512,1024) (1024,2048) (2048,4096) (4096,8192), S = 0..512 step 16; bf16 Hq=8 Hkv=1 D=128", paper_fig4},
      {"grid", "B = 32..4096 doubling, P in 1024..16384, S in 0,64,128,256,512; bf16 Hq=8 Hkv=1 D=128", full_grid},
      {"mha", "Hq=Hkv=32 D=128 (a CodeLlama-7B layer): B = 32..256, P = 1024..8192, S = 64; bf16", mha},
      {"models", "Hq=Hkv=40 D=128, Hq=32 Hkv=8 D=128, Hq=Hkv=32 D=64: B in 64,256, P in 2048,8192, S = 64; bf16", models},
      {"spec", "q_len in 2,4,8 (speculative decoding): B in 64,256,1024, P in 4096,8192,16384, S = 64; bf16 Hq=8 Hkv=1 D=128", spec},
      {"trees", "two-level 16x1024 and depth-4 4x1024/4x256 trees, each beside its copy: form (the prefix alone shared): B in 256,1024, P = 4096, S = 64; bf16 Hq=8 Hkv=1 D=128", trees},
      {"fig6", "the paper's Fig. 6 per layer: 1..16 problems x 128 samples, P = 2400, descriptions 300-800 shared (Gx300-800) or copied (copy:), S in 1,256,512; bf16 Hq=Hkv=4 D=128", fig6},
      {"cpu", "cpu-flat vs cpu-hydragen, fp32 D=128 Hq=8 Hkv in 8,1: B in 16,64, P in 1024,4096,16384, S = 64", cpu},
      {"quick", "B in 32,1024, P in 1024,16384, S = 64; bf16 Hq=8 Hkv=1 D=128; with cuda-hydragen-cublas: a few points for smoke runs", quick},
  };
  return all;
}

}  // namespace

std::vector<ShapePoint> product(const std::vector<DType>& dtypes, const std::vector<int>& batch,
                                const std::vector<int>& prefix, const std::vector<int>& suffix,
                                const std::vector<int>& q_len, const std::vector<int>& q_heads,
                                const std::vector<int>& kv_heads, const std::vector<int>& head_dim,
                                const std::vector<TreeSpec>& trees) {
  std::vector<ShapePoint> out;
  for (int b : batch)
    for (int p : prefix)
      for (int s : suffix)
        for (DType d : dtypes)
          for (int ql : q_len)
            for (int hq : q_heads)
              for (int hkv : kv_heads)
                for (int hd : head_dim)
                  for (const TreeSpec& t : trees) out.push_back(ShapePoint{d, b, p, s, ql, hq, hkv, hd, t});
  return out;
}

Grid preset(std::string_view name) {
  for (const Preset& p : presets()) {
    if (name == p.name) return p.make();
  }
  std::string known;
  for (const std::string& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("--preset '" + std::string(name) + "' is not one of " + known);
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : presets()) names.emplace_back(p.name);
  return names;
}

std::string preset_description(std::string_view name) {
  for (const Preset& p : presets()) {
    if (name == p.name) return p.description;
  }
  return {};
}

Point make_point(const std::string& backend_spec, const ShapePoint& shape) {
  const BackendChoice choice = parse_backend_choice(backend_spec);
  return Point{choice.backend, choice.storage, shape, choice.options};
}

}  // namespace hydragen::sweep
