#include "diff/npy_mode.hpp"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "diff/diff.hpp"
#include "diff/npy.hpp"

namespace hydragen::diff {

namespace {

bool exists(const std::string& path) { return std::ifstream(path, std::ios::binary).good(); }

std::string shape_text(const std::vector<std::size_t>& shape) { return NpyArray{DType::fp64, shape, {}}.shape_text(); }

void expect_shape(const std::string& path, const NpyArray& a, const std::vector<std::size_t>& want) {
  if (a.shape != want) {
    throw std::invalid_argument(path + ": shape " + a.shape_text() + " does not match the spec's " + shape_text(want));
  }
}

int json_int(const nlohmann::json& spec, const char* key, std::optional<int> fallback = std::nullopt) {
  if (!spec.contains(key)) {
    if (fallback) return *fallback;
    throw std::invalid_argument(std::string("spec.json: missing \"") + key + "\"");
  }
  const auto& v = spec.at(key);
  if (!v.is_number_integer()) throw std::invalid_argument(std::string("spec.json: \"") + key + "\" must be an integer");
  const auto x = v.get<long long>();
  if (x < -(1LL << 31) || x >= (1LL << 31)) throw std::invalid_argument(std::string("spec.json: \"") + key + "\" is out of range");
  return static_cast<int>(x);
}

std::vector<int> json_ints(const nlohmann::json& spec, const char* key) {
  if (!spec.contains(key) || !spec.at(key).is_array()) {
    throw std::invalid_argument(std::string("spec.json: \"") + key + "\" must be an array of integers");
  }
  std::vector<int> out;
  for (const auto& v : spec.at(key)) {
    if (!v.is_number_integer() || v.get<long long>() < -(1LL << 31) || v.get<long long>() >= (1LL << 31)) {
      throw std::invalid_argument(std::string("spec.json: \"") + key + "\" must be an array of integers");
    }
    out.push_back(static_cast<int>(v.get<long long>()));
  }
  return out;
}

std::size_t sz(int v) { return static_cast<std::size_t>(v); }

// Before anything is read or computed: a bad path costs nothing and nothing is written.
void check_paths(const std::string& dir, const std::string& out, const std::string& ref) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw std::invalid_argument("--npy-dir: " + dir + "/spec.json: cannot open (" +
                                (fs::exists(dir, ec) ? "not a directory" : "no such directory") + ")");
  }
  if (!ref.empty() && !fs::is_directory(ref, ec)) {
    throw std::invalid_argument("--reference-dir " + ref + ": " + (fs::exists(ref, ec) ? "not a directory" : "no such directory"));
  }
  if (out.empty()) return;
  if (!fs::is_directory(out, ec)) {
    throw std::invalid_argument("--write-reference " + out + ": " +
                                (fs::exists(out, ec) ? "not a directory" : "no such directory (OUT must exist)"));
  }
  if (access(out.c_str(), W_OK | X_OK) != 0) throw std::invalid_argument("--write-reference " + out + ": not writable");
  if (fs::equivalent(dir, out, ec)) {
    throw std::invalid_argument("--write-reference " + out + " is --npy-dir: it would overwrite the o.npy and lse.npy "
                                "under check");
  }
}

// 64-bit mix of the values' bits (splitmix64's finalizer per word): any changed value changes it.
std::uint64_t values_hash(std::uint64_t h, const std::vector<double>& values) {
  for (const double v : values) {
    std::uint64_t x;
    std::memcpy(&x, &v, sizeof x);
    x ^= h + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    h = x ^ (x >> 31);
  }
  return h;
}

// The fp64 reference REF holds for these inputs: o.npy and lse.npy in fp64, of the problem's shapes.
Results read_reference(const std::string& ref, const Problem& problem, const std::vector<std::size_t>& o_shape,
                       const std::vector<std::size_t>& lse_shape) {
  std::ifstream in(ref + "/inputs.txt");
  std::string written;
  if (!in || !std::getline(in, written)) {
    throw std::invalid_argument("--reference-dir " + ref + "/inputs.txt: cannot open (write it with --write-reference)");
  }
  const std::string mine = inputs_fingerprint(problem);
  if (written != mine) {
    throw std::invalid_argument("--reference-dir " + ref + " holds the reference of other inputs (" + written +
                                "; --npy-dir's: " + mine + ")");
  }
  Results r;
  for (const char* name : {"o", "lse"}) {
    const std::string path = ref + "/" + name + ".npy";
    const NpyArray a = read_npy(path);
    expect_shape(path, a, name[0] == 'o' ? o_shape : lse_shape);
    if (a.dtype != DType::fp64) {
      throw std::invalid_argument(path + ": dtype " + std::string(dtype_name(a.dtype)) +
                                  "; a reference to judge against is fp64 (--write-reference without --reference-dtype)");
    }
    (name[0] == 'o' ? r.o : r.lse) = a.values();
  }
  return r;
}

}  // namespace

std::string inputs_fingerprint(const Problem& problem) {
  std::uint64_t h = values_hash(0, problem.q);
  for (const auto& k : problem.k) h = values_hash(h, k);
  for (const auto& v : problem.v) h = values_hash(h, v);
  std::ostringstream s;
  s << problem.shape.describe() << " tree=(" << problem.tree.describe() << ") inputs=" << std::hex << h;
  return s.str();
}

Problem load_npy_problem(const std::string& dir) {
  const std::string spec_path = dir + "/spec.json";
  std::ifstream in(spec_path);
  if (!in) throw std::invalid_argument(spec_path + ": cannot open");
  nlohmann::json spec;
  try {
    spec = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(spec_path + ": " + e.what());
  }
  if (!spec.is_object()) throw std::invalid_argument(spec_path + ": not a JSON object");
  for (const auto& item : spec.items()) {
    static const char* known[] = {"q_heads", "kv_heads", "head_dim", "q_len", "scale", "parents", "lengths", "leaves"};
    bool ok = false;
    for (const char* k : known) ok = ok || item.key() == k;
    if (!ok) throw std::invalid_argument(spec_path + ": unknown key \"" + item.key() + "\"");
  }
  SharingTree tree = SharingTree::from_parents(json_ints(spec, "parents"), json_ints(spec, "lengths"),
                                               json_ints(spec, "leaves"));
  AttentionShape shape = make_shape(tree.num_seqs(), json_int(spec, "q_len", 1), json_int(spec, "q_heads"),
                                    json_int(spec, "kv_heads"), json_int(spec, "head_dim"), DType::fp64);
  if (spec.contains("scale")) {
    if (!spec.at("scale").is_number()) throw std::invalid_argument(spec_path + ": \"scale\" must be a number");
    shape.scale = spec.at("scale").get<float>();
  }
  validate_problem(shape, tree);

  const std::string q_path = dir + "/q.npy";
  const NpyArray q = read_npy(q_path);
  expect_shape(q_path, q, {sz(shape.num_seqs), sz(shape.q_len), sz(shape.q_heads), sz(shape.head_dim)});
  shape.dtype = q.dtype;
  Problem problem{shape, tree, q.values(), {}, {}};
  for (int i = 0; i < tree.num_segments(); ++i) {
    for (const char* name : {"k", "v"}) {
      const std::string path = dir + "/" + name + std::to_string(i) + ".npy";
      const NpyArray a = read_npy(path);
      expect_shape(path, a, {sz(tree.length(i)), sz(shape.kv_heads), sz(shape.head_dim)});
      if (a.dtype != q.dtype) {
        throw std::invalid_argument(path + ": dtype " + std::string(dtype_name(a.dtype)) + " is not q.npy's " +
                                    std::string(dtype_name(q.dtype)));
      }
      (name[0] == 'k' ? problem.k : problem.v).push_back(a.values());
    }
  }
  return problem;
}

NpyDiffResult run_npy_diff(const Options& options, const BackendRegistry& registry) {
  const AttentionBackend& reference = registry.get("reference");
  const std::string& dir = options.npy_dir;
  check_paths(dir, options.write_reference, options.reference_dir);
  const Problem problem = load_npy_problem(dir);
  const AttentionShape& shape = problem.shape;
  NpyDiffResult result{dir, shape, problem.tree.describe(), std::nullopt, false, std::nullopt, "", ""};

  const std::vector<std::size_t> o_shape{sz(shape.num_seqs), sz(shape.q_len), sz(shape.q_heads), sz(shape.head_dim)};
  const std::vector<std::size_t> lse_shape{sz(shape.num_seqs), sz(shape.q_len), sz(shape.q_heads)};
  const std::string o_path = dir + "/o.npy", lse_path = dir + "/lse.npy";
  // Read (and check) the external outputs before spending time on the reference.
  Results out;
  if (options.write_reference.empty() || exists(o_path)) {
    const NpyArray o = read_npy(o_path);
    expect_shape(o_path, o, o_shape);
    result.o_dtype = o.dtype;
    out.o = o.values();
    if (exists(lse_path)) {
      const NpyArray lse = read_npy(lse_path);
      expect_shape(lse_path, lse, lse_shape);
      result.lse_given = true;
      out.lse = lse.values();
    }
  }

  auto computed = [&] {  // only then the copy of the inputs as fp64 (their values are exact in it already)
    Problem exact = problem;
    exact.shape.dtype = DType::fp64;
    return run_backend(reference, exact);
  };
  const Results ref = options.reference_dir.empty() ? computed()
                                                    : read_reference(options.reference_dir, problem, o_shape, lse_shape);
  result.reference_from = options.reference_dir;
  if (result.o_dtype) {
    // Outside kernels' LSEs are judged by what a merge can see, unless asked for our own bound.
    result.comparison = compare_outside(out, ref, *result.o_dtype, logit_bound(problem),
                                        options.strict_lse ? LseBound::strict : LseBound::merge);
  }
  if (!options.write_reference.empty()) {
    write_npy(options.write_reference + "/o.npy", options.reference_dtype, o_shape, ref.o);
    write_npy(options.write_reference + "/lse.npy", lse_dtype(options.reference_dtype), lse_shape, ref.lse);
    std::ofstream(options.write_reference + "/inputs.txt") << inputs_fingerprint(problem) << "\n";
    result.wrote = options.write_reference;
  }
  return result;
}

std::string npy_summary_line(const NpyDiffResult& r) {
  std::string line = "npy=" + r.dir + " ";
  if (!r.wrote.empty()) line += "wrote_reference=" + r.wrote + " ";
  if (!r.reference_from.empty()) line += "reference=" + r.reference_from + " ";
  if (r.comparison) return line + outside_summary(r.shape, r.tree, *r.o_dtype, r.lse_given, *r.comparison);
  return line + r.shape.describe() + " tree=(" + r.tree + ") (no o.npy: nothing compared)";
}

}  // namespace hydragen::diff
