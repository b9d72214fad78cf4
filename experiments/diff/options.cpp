#include "diff/options.hpp"

#include "flags/flag_checks.hpp"
#include "flags/tree_flag.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace hydragen::diff {

namespace {

constexpr const char* kDescription =
    "hydragen-diff: runs one backend on a generated problem and compares its O and LSE with the fp64 "
    "`reference` backend. Prints one summary line; exit code 0 PASS, 1 FAIL (or a failure while running), "
    "2 bad usage or an invalid problem.";

constexpr const char* kFooter =
    "Examples:\n"
    "  hydragen-diff --list\n"
    "  hydragen-diff --backend cpu-hydragen --batch 16 --prefix 1024 --suffix-lens 64,0,17,3,...\n"
    "  hydragen-diff --backend reference-decomposed --dtype fp64 --batch 6 --tree 3x32\n"
    "  hydragen-diff --backend reference-decomposed --dtype fp64 --parents -1,0,0 --lengths 16,4,5 --leaves 1,2\n"
    "  hydragen-diff --backend reference-decomposed --dtype fp64 --tokens FILE\n"
    "  hydragen-diff --npy-dir DIR [--write-reference OUT]\n"
    "  hydragen-diff --random 500 --seed 1 [--backend cpu-flat,cpu-hydragen]\n"
    "\n"
    "--random N draws N small problems (trees of depth 1-4 given segment by segment, segments of 0 and 1\n"
    "tokens, q_len 1-8, g = Hq/Hkv from 1 to 32, dtypes and head dims 16-256 narrowed to what the chosen\n"
    "backends take, logit scales 1e-3 to 1e4, both storages) and checks each chosen backend on each;\n"
    "problem i depends only on --seed and i. Each failure prints the single-problem command line that\n"
    "reproduces it. Timing (2 cores, Release): about 20 ms per problem for its inputs and fp64 reference,\n"
    "made once and shared by the backends, plus about 1 ms per CPU backend; --random 500 about 11 s for\n"
    "the default set (reference-decomposed, cpu-flat, cpu-hydragen).";

// Flags kept as text (or with a CLI-visible default) until CLI11 has split the command line; parse()
// then converts them with the project's own parsers so every message names the flag and value.
struct RawFlags {
  int batch = Options::default_batch;
  double scale = 0;
  std::string dtype = "fp32", storage = "shared", tree = "prefix";
  std::string suffix_lens, parents, lengths, leaves;
  std::string groups, group_len, levels;  // retired: parse() says what to write instead
  std::string reference_dtype = "fp64";
};

using flags::decimal;
using flags::empty_error;

void bind(CLI::App& app, Options& o, RawFlags& raw) {
  // TakeLast only so that parse() sees a repeated flag and refuses it by name (reject_repeats).
  app.option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(36);
  app.footer(kFooter);

  app.add_option("--backend", o.backend,
                 "backend to check, with any of its plan options (see --list), e.g. cuda-hydragen:form=wide; required "
                 "unless --list or --random")
      ->type_name("NAME[:OPT=V]");
  app.add_flag("--list", o.list, "list the registered backends: name, memory, availability, summary, options");
  // The integer flags: decimal text that fits the type.
  auto add_integer = [&app](const char* flag, auto& value, const char* help, const char* type) {
    return app.add_option(flag, value, help)->type_name(type)->check(decimal<std::remove_reference_t<decltype(value)>>());
  };
  add_integer("--batch", raw.batch, "sequences B (default 4; with --leaves or --tokens: their sequences)", "B");
  add_integer("--prefix", o.prefix, "tokens P of the shared root segment", "P");
  auto* suffix = add_integer("--suffix", o.suffix, "own tokens S of every sequence", "S");
  auto* suffix_lens = app.add_option("--suffix-lens", raw.suffix_lens,
                                     "ragged own tokens, one per sequence (count must equal --batch)")
                          ->type_name("S0,S1,...");
  suffix->excludes(suffix_lens);
  add_integer("--q-len", o.q_len, "queries per sequence (causal within the leaf when > 1)", "N");
  add_integer("--q-heads", o.q_heads, "query heads Hq", "HQ");
  add_integer("--kv-heads", o.kv_heads, "key/value heads Hkv (Hq must be a multiple)", "HKV");
  add_integer("--head-dim", o.head_dim, "head dimension D", "D");
  app.add_option("--dtype", raw.dtype, "fp64|fp32|fp16|bf16: the backend's tensors (reference-*: fp64 only)")
      ->type_name("DTYPE");
  app.add_option("--storage", raw.storage, "shared (one copy per segment) | redundant (a copy per sequence)")
      ->type_name("STORAGE");
  app.add_option("--tree", raw.tree, flags::kTreeHelp)->type_name("TREE");
  app.add_option("--parents", raw.parents,
                 "a tree given segment by segment (instead of --tree, --prefix and the suffixes): the parent "
                 "segment of each segment, -1 for a root; with --lengths and --leaves")
      ->type_name("P0,P1,...");
  app.add_option("--lengths", raw.lengths, "with --parents: tokens in each segment")->type_name("L0,L1,...");
  app.add_option("--leaves", raw.leaves, "with --parents: the leaf segment of each sequence")->type_name("S0,S1,...");
  app.add_option("--tokens", o.tokens,
                 "token ids, one sequence a line: the tree is found in them (instead of --tree, --prefix and the "
                 "suffixes)")
      ->type_name("FILE");
  // Hidden: flags of hydragen-diff's trees before --tree had one grammar, refused with what to write.
  app.add_option("--groups", raw.groups)->group("");
  app.add_option("--group-len", raw.group_len)->group("");
  app.add_option("--levels", raw.levels)->group("");
  add_integer("--seed", o.seed, "seed of the N(0,1) inputs", "N");
  app.add_option("--logit-scale", o.logit_scale, "multiplies Q: scores spread about this much (1e4: extreme logits)")
      ->type_name("X");
  app.add_option("--scale", raw.scale, "score scale")->type_name("X")->default_str("1/sqrt(D)");
  app.add_option("--npy-dir", o.npy_dir,
                 "check an external O instead: spec.json, q.npy, k<i>.npy, v<i>.npy, o.npy [, lse.npy] from DIR "
                 "(no --backend; README: .npy interop)")
      ->type_name("DIR");
  app.add_option("--write-reference", o.write_reference,
                 "with --npy-dir: write our fp64 reference o.npy and lse.npy to OUT (o.npy in DIR then optional)")
      ->type_name("OUT");
  app.add_option("--reference-dtype", raw.reference_dtype,
                 "with --write-reference: dtype of the written O (LSE: fp64 for fp64, else fp32)")
      ->type_name("DTYPE");
  app.add_option("--reference-dir", o.reference_dir,
                 "with --npy-dir: judge against the fp64 reference that --write-reference wrote to REF for the same "
                 "inputs instead of computing it again (checking several outputs of one problem)")
      ->type_name("REF");
  app.add_flag("--strict-lse", o.strict_lse,
               "with --npy-dir: judge lse.npy by our backends' fp32-grade bound instead of what a merge at O's "
               "precision can see (README: tolerances)");
  app.add_flag("--explain", o.explain,
               "print how the backend's plan decided to run, one rule a line (docs/planner-rules.md), before the check");
  app.add_option("--explain-device", o.explain_device,
                 "with --explain: decide as the CUDA planner would on that device, without a GPU, and run no check, "
                 "e.g. \"NVIDIA H100 80GB HBM3,132,wgmma,pdl\" (pdl: programmatic dependent launch, sm_90+)")
      ->type_name("NAME,SMS,wgmma|no-wgmma,pdl|no-pdl");
  app.add_option("--explain-rates", o.explain_rates,
                 "with --explain-device: its rates from FILE's rows for NAME (device-rates.csv's form, e.g. what "
                 "hydragen-bench --calibrate wrote) instead of the compiled-in table")
      ->type_name("FILE");
  add_integer("--random", o.random,
              "soak: check N random problems drawn from --seed; --backend then takes a comma-separated list "
              "(default: every available backend but reference); see below",
              "N");
  // An empty value would read as 0 or as the flag not given (--npy-dir "", --write-reference "").
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_size() > 0) option->check(CLI::Validator(empty_error, ""));
  }
}

// One value per flag: of two, neither is obviously the one meant.
std::string text_of(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// The flags that describe one problem: the --npy-dir and --random modes make the problem themselves.
const std::vector<const char*> kProblemFlags = {
    "--batch", "--prefix", "--suffix", "--suffix-lens", "--q-len",   "--q-heads", "--kv-heads", "--head-dim",
    "--dtype", "--storage", "--tree",  "--parents",     "--lengths", "--leaves",  "--tokens", "--logit-scale",
    "--scale"};

void reject_if_given(const CLI::App& app, const std::vector<const char*>& flags, const std::string& why) {
  for (const char* flag : flags) {
    if (app.count(flag) > 0) throw std::invalid_argument(std::string(flag) + " " + why);
  }
}

// --random: the soak draws every problem, so only --seed and a list of backends may come with it.
Action parse_random(const CLI::App& app, Options& o) {
  if (o.random < 1) throw std::invalid_argument("--random must be at least 1, got " + std::to_string(o.random));
  reject_if_given(app, kProblemFlags, "does not apply with --random (the soak draws every problem; --seed seeds the draw)");
  reject_if_given(app, {"--write-reference", "--reference-dtype", "--strict-lse", "--explain", "--explain-device", "--explain-rates"},
                  "does not apply with --random");
  if (app.count("--backend") == 0) return Action::random;
  for (std::size_t start = 0; start <= o.backend.size();) {
    const std::size_t comma = std::min(o.backend.find(',', start), o.backend.size());
    const std::string spec = o.backend.substr(start, comma - start);
    start = comma + 1;
    if (spec.empty()) throw std::invalid_argument("--backend '" + o.backend + "': an empty name in the list");
    BackendChoice choice = parse_backend_choice(spec);
    if (choice.storage_named) {
      throw std::invalid_argument("--backend " + spec + ": the soak draws the storage; name the backend without it");
    }
    for (const BackendChoice& earlier : o.random_backends) {
      if (earlier.label() == choice.label()) throw std::invalid_argument("--backend names " + spec + " twice");
    }
    o.random_backends.push_back(std::move(choice));
  }
  return Action::random;
}

// --groups/--group-len and --levels, hydragen-diff's flags of two-level and levels trees: what they
// gave is a --tree text now.
void reject_retired_flags(const CLI::App& app, const RawFlags& raw) {
  if (app.count("--groups") > 0 || app.count("--group-len") > 0) {
    const std::string groups = app.count("--groups") > 0 ? raw.groups : "2";  // two-level's defaults
    const std::string length = app.count("--group-len") > 0 ? raw.group_len : "64";
    throw std::invalid_argument("--groups and --group-len are gone: --tree two-level --groups " + groups + " --group-len " +
                                length + " is now --tree " + groups + "x" + length + " (" + groups + " groups of " + length +
                                " shared tokens)");
  }
  if (app.count("--levels") > 0) {
    throw std::invalid_argument("--levels is gone: --tree levels --levels " + raw.levels + " is now --tree " + raw.levels);
  }
}

// The tree's source: --parents/--lengths/--leaves or --tokens when given, else --tree's shape. A --tree
// given with them is parsed first, so that a retired word (--tree custom) gets its own advice.
void parse_tree_source(const CLI::App& app, const RawFlags& raw, Options& o) {
  o.tree = flags::parse_tree(raw.tree);
  const bool segments = app.count("--parents") + app.count("--lengths") + app.count("--leaves") > 0;
  const bool tokens = app.count("--tokens") > 0;
  if (!segments && !tokens) return;
  const std::string given = segments ? "--parents, --lengths and --leaves" : "--tokens";
  const std::string why = segments ? " (they give every segment)" : " (the file gives every sequence)";
  reject_if_given(app, {"--tree", "--prefix", "--suffix", "--suffix-lens"}, "does not apply with " + given + why);
  if (segments && tokens) throw std::invalid_argument("--tokens does not apply with " + given + why);
  if (tokens) {
    o.tree_source = TreeSource::tokens;
    return;
  }
  o.tree_source = TreeSource::segments;
  for (const char* flag : {"--parents", "--lengths", "--leaves"}) {
    if (app.count(flag) == 0) throw std::invalid_argument(std::string("a tree given segment by segment needs ") + flag);
  }
  o.parents = parse_int_list("--parents", raw.parents);
  o.lengths = parse_int_list("--lengths", raw.lengths);
  o.leaves = parse_int_list("--leaves", raw.leaves);
}

}  // namespace

std::vector<int> parse_int_list(std::string_view flag, std::string_view text) {
  std::vector<int> out;
  if (text.find_first_not_of(" \t") == std::string_view::npos) return out;
  std::size_t start = 0;
  for (std::size_t index = 0;; ++index) {
    const std::size_t comma = text.find(',', start);
    std::string_view entry = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const std::size_t first = entry.find_first_not_of(" \t");
    const std::size_t last = entry.find_last_not_of(" \t");
    entry = first == std::string_view::npos ? std::string_view{} : entry.substr(first, last - first + 1);
    int value = 0;
    const auto [end, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), value);
    if (entry.empty() || ec != std::errc{} || end != entry.data() + entry.size()) {
      throw std::invalid_argument(std::string(flag) + ": entry " + std::to_string(index) + " ('" + std::string(entry) +
                                  "') is not an int (expected a comma-separated list such as 16,4,5)");
    }
    out.push_back(value);
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

Action Options::parse(int argc, const char* const argv[]) {
  CLI::App app{kDescription, "hydragen-diff"};
  RawFlags raw;
  bind(app, *this, raw);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return Action::help;  // --help
    throw std::invalid_argument(std::string(e.what()) + " (see --help)");
  }
  flags::reject_repeats(app);
  reject_retired_flags(app, raw);
  if (list) return Action::list;
  if (!npy_dir.empty()) {
    // The problem comes from DIR/spec.json: the generator's flags would be silently ignored.
    reject_if_given(app, {"--backend", "--seed", "--random", "--explain", "--explain-device", "--explain-rates"},
                    "does not apply with --npy-dir (DIR/spec.json and the .npy files give the problem)");
    reject_if_given(app, kProblemFlags, "does not apply with --npy-dir (DIR/spec.json and the .npy files give the problem)");
    try {
      reference_dtype = parse_dtype(raw.reference_dtype);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--reference-dtype: ") + e.what());
    }
    if (write_reference.empty()) reject_if_given(app, {"--reference-dtype"}, "needs --write-reference OUT");
    if (!reference_dir.empty() && !write_reference.empty()) {
      throw std::invalid_argument("--reference-dir reads a reference, --write-reference writes one: give one of them");
    }
    return Action::run;
  }
  if (app.count("--random") > 0) return parse_random(app, *this);
  if (!explain_device.empty() && !explain) throw std::invalid_argument("--explain-device needs --explain");
  if (!explain_rates.empty() && explain_device.empty()) {
    throw std::invalid_argument("--explain-rates needs --explain-device (on a GPU the plan takes the rates it would run with)");
  }
  if (!write_reference.empty()) throw std::invalid_argument("--write-reference needs --npy-dir DIR");
  if (!reference_dir.empty()) throw std::invalid_argument("--reference-dir needs --npy-dir DIR");
  reject_if_given(app, {"--strict-lse"}, "needs --npy-dir DIR (our backends are always held to the strict LSE bound)");
  reject_if_given(app, {"--reference-dtype"}, "needs --npy-dir DIR and --write-reference OUT");
  if (backend.empty()) throw std::invalid_argument("--backend NAME is required (--list shows the registered backends)");

  // The storage may also be written in the backend spec, as the sweep takes it; not both ways.
  const BackendChoice choice = parse_backend_choice(backend);
  if (choice.storage_named) reject_if_given(app, {"--storage"}, "conflicts with the storage named in --backend " + backend);
  backend = choice.backend;
  plan_options = choice.options;
  dtype = parse_dtype(raw.dtype);
  storage = choice.storage_named ? choice.storage : parse_storage(raw.storage);
  parse_tree_source(app, raw, *this);
  if (app.count("--batch") > 0) batch = raw.batch;
  if (app.count("--scale") > 0) scale = raw.scale;
  // Checked here, not left to the shape and problem, so the message names the flag.
  for (const auto& [flag, value] : {std::pair<const char*, int>{"--q-len", q_len}, {"--q-heads", q_heads},
                                    {"--kv-heads", kv_heads}, {"--head-dim", head_dim}}) {
    if (value < 1) throw std::invalid_argument(std::string(flag) + " must be positive, got " + std::to_string(value));
  }
  if (!(logit_scale > 0) || !std::isfinite(logit_scale)) {
    throw std::invalid_argument("--logit-scale must be positive and finite, got " + text_of(logit_scale));
  }
  if (const float fp32_scale = static_cast<float>(scale.value_or(1)); !(fp32_scale > 0) || !std::isfinite(fp32_scale)) {
    throw std::invalid_argument("--scale must be positive and finite in fp32, got " + text_of(*scale));
  }
  if (app.count("--suffix-lens") > 0) suffix_lens = parse_int_list("--suffix-lens", raw.suffix_lens);
  return Action::run;
}

std::string Options::usage() {
  CLI::App app{kDescription, "hydragen-diff"};
  Options options;
  RawFlags raw;
  bind(app, options, raw);
  return app.help();
}

}  // namespace hydragen::diff
