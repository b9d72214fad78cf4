// What a problem is: AttentionShape, SharingTree and its builders, detect_sharing (token ids ->
// tree and each segment's source tokens) at SharingRates, and what it costs (estimate_cost).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "hydragen/cost_model.hpp"
#include "hydragen/detect.hpp"
#include "hydragen/sharing_tree.hpp"

namespace hydragen::python {

namespace {

// (tree, spans): spans[i] = (seq, begin, end), segment i's tokens in sequence seq's token list.
std::tuple<SharingTree, std::vector<std::tuple<int, long long, long long>>> detected(const DetectedSharing& d) {
  std::vector<std::tuple<int, long long, long long>> spans;
  for (const DetectedSharing::Span& s : d.spans) spans.emplace_back(s.seq, s.begin, s.end);
  return {d.tree, spans};
}

}  // namespace

void bind_problem(nb::module_& m) {
  nb::class_<AttentionShape>(m, "AttentionShape", "The dimensions of one problem (DESIGN.md's B, q_len, Hq, Hkv, D).")
      .def(
          "__init__",
          [](AttentionShape* self, int num_seqs, int q_len, int q_heads, int kv_heads, int head_dim,
             const std::string& dtype, float scale) {
            new (self) AttentionShape(make_shape(num_seqs, q_len, q_heads, kv_heads, head_dim, parse_dtype(dtype)));
            if (scale != 0) self->scale = scale;
            self->validate();
          },
          nb::arg("num_seqs"), nb::arg("q_len"), nb::arg("q_heads"), nb::arg("kv_heads"), nb::arg("head_dim"),
          nb::arg("dtype") = "bf16", nb::arg("scale") = 0.0f)
      .def_ro("num_seqs", &AttentionShape::num_seqs)
      .def_ro("q_len", &AttentionShape::q_len)
      .def_ro("q_heads", &AttentionShape::q_heads)
      .def_ro("kv_heads", &AttentionShape::kv_heads)
      .def_ro("head_dim", &AttentionShape::head_dim)
      .def_ro("scale", &AttentionShape::scale)
      .def_prop_ro("dtype", [](const AttentionShape& s) { return std::string(dtype_name(s.dtype)); })
      .def("describe", &AttentionShape::describe)
      .def("__repr__", [](const AttentionShape& s) { return "AttentionShape(" + s.describe() + ")"; });

  nb::class_<SharingTree>(m, "SharingTree",
                          "The KV of a batch as a forest of segments; each sequence is the path from a root to its "
                          "own leaf. Every builder validates and raises ValueError naming the field.")
      .def_static("from_parents", &SharingTree::from_parents, nb::arg("parents"), nb::arg("lengths"),
                  nb::arg("seq_leaves"), "parents[i]: segment i's parent (-1: a root); lengths[i]: its tokens; "
                                         "seq_leaves[s]: sequence s's leaf segment.")
      .def_static("flat", &SharingTree::flat, nb::arg("lengths"), "No sharing: sequence s owns lengths[s] tokens.")
      .def_static("prefix_suffix", &SharingTree::prefix_suffix, nb::arg("prefix_len"), nb::arg("suffix_lens"),
                  "One shared prefix, then one suffix per sequence.")
      .def_static("two_level", &SharingTree::two_level, nb::arg("root_len"), nb::arg("group_lens"),
                  nb::arg("suffix_lens"), "A root; group i adds group_lens[i] tokens shared by its sequences, "
                                          "whose suffixes are suffix_lens[i].")
      .def_static(
          "from_token_ids",
          [](const std::vector<std::vector<int>>& token_ids, long long min_tokens) {
            return detect_sharing(token_ids, min_tokens).tree;
          },
          nb::arg("token_ids"), nb::arg("min_tokens") = 1,
          "The tree detect_sharing finds in each sequence's token ids (a run shared when >= min_tokens long).")
      .def_prop_ro("num_segments", &SharingTree::num_segments)
      .def_prop_ro("num_seqs", &SharingTree::num_seqs)
      .def_prop_ro("depth", &SharingTree::depth)
      .def_prop_ro("total_tokens", &SharingTree::total_tokens)
      .def_prop_ro("lengths", &SharingTree::lengths)
      .def_prop_ro("parents", &SharingTree::parents)
      .def_prop_ro("seq_leaves", &SharingTree::seq_leaves)
      .def("path", &SharingTree::path, nb::arg("seq"), "Segments from root to leaf.")
      .def("path_length", &SharingTree::path_length, nb::arg("seq"))
      .def("seqs_below", &SharingTree::seqs_below, nb::arg("segment"))
      .def("flattened", &SharingTree::flattened, "The same sequences with no sharing (redundant storage).")
      .def("describe", &SharingTree::describe)
      .def("__repr__", [](const SharingTree& t) { return "SharingTree(" + t.describe() + ")"; });

  nb::class_<SharingRates>(m, "SharingRates",
                           "What detection's cost model weighs a shared segment's partials at: partials_share of the "
                           "K/V's DRAM rate, and its source. The default is no measured rate (1); "
                           "hydragen.sharing_rates(memory) gives a device's.")
      .def(
          "__init__",
          [](SharingRates* self, double partials_share, const std::string& source) {
            new (self) SharingRates{partials_share, source};
          },
          nb::arg("partials_share") = kRateFreePartialsShare, nb::arg("source") = SharingRates{}.source)
      .def_ro("partials_share", &SharingRates::partials_share)
      .def_ro("source", &SharingRates::source)
      .def("describe", &SharingRates::describe)
      .def("__repr__", [](const SharingRates& r) { return "SharingRates(" + r.describe() + ")"; });

  m.def(
      "detect_sharing",
      [](const std::vector<std::vector<int>>& token_ids, std::optional<long long> min_tokens,
         std::optional<AttentionShape> shape, std::optional<SharingRates> rates) {
        if (min_tokens.has_value() == shape.has_value()) {
          throw std::invalid_argument("detect_sharing: give min_tokens or shape (the cost model's rule), not both");
        }
        if (min_tokens && rates) throw std::invalid_argument("detect_sharing: rates weigh the cost model's rule: give them with shape");
        return detected(shape ? detect_sharing(token_ids, *shape, rates.value_or(SharingRates{}))
                              : detect_sharing(token_ids, *min_tokens));
      },
      nb::arg("token_ids"), nb::arg("min_tokens").none() = nb::none(), nb::arg("shape").none() = nb::none(),
      nb::arg("rates").none() = nb::none(),
      "(tree, spans): the sharing tree of the sequences' token ids and, per segment, (seq, begin, end): "
      "where its tokens are in that sequence's list (how to lay out the KV cache). With shape, a run is "
      "shared where the cost model says it pays at `rates` (default SharingRates(): no measured rate; "
      "hydragen.sharing_rates(\"cuda\") for the current GPU's).");

  nb::class_<CostEstimate>(m, "CostEstimate", "Bytes moved and FLOPs of one problem, flat vs decomposed (cost_model.hpp).")
      .def_ro("flops", &CostEstimate::flops, "4 D per (sequence, query, query head, attended token)")
      .def_ro("floor_bytes", &CostEstimate::floor_bytes, "each distinct K/V byte once + Q + O + LSE")
      .def_ro("flat_bytes", &CostEstimate::flat_bytes, "flat: every sequence reads its whole path")
      .def_ro("decomposed_bytes", &CostEstimate::decomposed_bytes,
              "Hydragen: segments once, Q per segment, fp32 partials, merge")
      .def_ro("kv_bytes", &CostEstimate::kv_bytes, "distinct K/V bytes stored")
      .def_ro("redundant_kv_bytes", &CostEstimate::redundant_kv_bytes, "K/V bytes with every path copied per sequence")
      .def_prop_ro("flat_intensity", &CostEstimate::flat_intensity, "FLOP per byte, flat")
      .def_prop_ro("decomposed_intensity", &CostEstimate::decomposed_intensity, "FLOP per byte, decomposed");
  m.def(
      "estimate_cost", [](const AttentionShape& shape, const SharingTree& tree) { return estimate_cost(shape, tree); },
      nb::arg("shape"), nb::arg("tree"), "What the walkthrough's step 7 prints: FLOPs and bytes, flat vs decomposed.");
}

}  // namespace hydragen::python
