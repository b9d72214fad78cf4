#pragma once
// hydragen._core.Plan: AttentionBackend::plan for the problem that example tensors describe, and
// AttentionPlan::run on DLPack tensors. The Python side (hydragen/_attention.py) picks the stream
// and allocates the outputs; this side only checks and hands views to run().
#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <string>

#include "hydragen/attention.hpp"
#include "tensors.hpp"

namespace hydragen::python {

class Plan {
 public:
  // q [B, q_len, Hq, D]; k, v: a list of [length, Hkv, D] per segment, or one [total tokens, Hkv, D];
  // all in one dtype on one device. backend: "auto" (default_backend for the tensors' memory) or
  // "name[:option=value...]"; scale 0: 1/sqrt(D).
  Plan(nb::handle q, nb::handle k, nb::handle v, const SharingTree& tree, const std::string& backend, float scale);

  // The planned problem's tensors on the planned device; o [B, q_len, Hq, D] and lse [B, q_len, Hq]
  // (fp32, fp64 for fp64) are written. leaf_lengths: None, or int32 [B] on that device (the tokens
  // each leaf holds now; attention.hpp). stream: a cudaStream_t as an integer (0: the default).
  // The GIL is released while run() launches (CUDA) or computes (host).
  void run(nb::handle q, nb::handle k, nb::handle v, nb::handle o, nb::handle lse, std::uintptr_t stream,
           nb::handle leaf_lengths);

  const AttentionShape& shape() const { return shape_; }
  const SharingTree& tree() const { return tree_; }
  const std::string& backend() const { return label_; }  // "cuda-hydragen:form=wide"
  const Place& place() const { return place_; }
  // The plan's decisions, one a line (AttentionPlan::decisions; empty for a plan that makes none).
  std::string explain() const { return hydragen::explain(plan_->decisions()); }

 private:
  AttentionShape shape_;
  SharingTree tree_;
  Place place_;
  std::string label_;
  std::unique_ptr<AttentionPlan> plan_;
};

}  // namespace hydragen::python
