#pragma once
// Pieces cpu-flat and cpu-hydragen share: query-row gathering, causal limits, output writing, and
// what the CPU backends support.
#include <vector>

#include "hydragen/attention.hpp"
#include "segment_attention.hpp"

namespace hydragen::cpu {

// Largest head dimension the CPU backends accept (a tile row is D floats; nothing else limits it).
inline constexpr int kMaxHeadDim = 256;

Support cpu_supports(const AttentionShape& shape);

// Q widened to fp32: out is [B, q_len, Hq, D].
void widen_queries(const AttentionShape& shape, const ConstTensor& q, std::vector<float>& out);

// The query rows of `seqs` that share KV head `kv_head`, ordered (sequence, query, head in group):
// rows is [seqs.size() * q_len * g, D]. q32 is [B, q_len, Hq, D].
void gather_rows(const AttentionShape& shape, const float* q32, const std::vector<int>& seqs, int kv_head,
                 RowMatrix& rows);

// Keys each of those rows may see in a segment of `len` tokens: all, or the causal part of a leaf.
std::vector<long long> row_limits(const AttentionShape& shape, std::size_t num_seqs, long long len, bool is_leaf);

// Writes rows [first_row, first_row + q_len * g) of `result` as sequence `seq`'s outputs for KV head
// `kv_head`: O narrowed to the problem's dtype, LSE in fp32.
void write_rows(const AttentionShape& shape, const Partial& result, int first_row, int seq, int kv_head,
                const AttentionOutputs& out);

KvSlice kv_slice(const AttentionShape& shape, const ConstTensor& t, int kv_head);

// What both CPU plans hold: the problem, one workspace per thread sized for `max_rows` query rows,
// and the queries widened to fp32.
// Bytes of CpuPlan's own buffers for plans whose widest task has `max_rows` query rows: the
// threads' workspaces and the widened queries; plus each thread's gathered queries and running
// partial while it runs.
std::size_t cpu_plan_bytes(const AttentionShape& shape, int max_rows);

class CpuPlan : public AttentionPlan {
 protected:
  CpuPlan(const AttentionShape& shape, const SharingTree& tree, int max_rows);
  // check_io, then widens Q into q32_ and takes the run's segment lengths (run_lengths).
  void prepare(const AttentionInputs& in, const AttentionOutputs& out);

  AttentionShape shape_;
  SharingTree tree_;
  int threads_;
  std::vector<Workspace> workspaces_;  // one per thread
  std::vector<float> q32_;             // [B, q_len, Hq, D] widened queries
  std::vector<long long> lengths_;     // [num_segments] tokens of each segment in this run
};

}  // namespace hydragen::cpu
