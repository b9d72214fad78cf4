#pragma once
// The index conventions every backend, the reference and the schedules share (DESIGN.md section 2),
// written once, for host and device code.
//
// Q and O are [B, q_len, Hq, D] and LSE [B, q_len, Hq]: query (seq, qi, head) is row
// (seq * q_len + qi) * Hq + head of them. Query head h reads KV head h / g; the g heads of KV head kv
// are kv * g + j, j < g. The q_len * g rows of one sequence that read one KV head are stacked
// query-major, head-minor (stacked index r = qi * g + j): the order of every batched product.
#include "hydragen/host_device.hpp"
#include "hydragen/shape.hpp"

namespace hydragen {

struct QueryIndex {
  int q_len;
  int q_heads;
  int group_size;  // g

  HYDRAGEN_HD long long row(int seq, int qi, int head) const {
    return (static_cast<long long>(seq) * q_len + qi) * q_heads + head;
  }
  // Query head j of KV head kv_head.
  HYDRAGEN_HD long long row(int seq, int qi, int kv_head, int j) const { return row(seq, qi, kv_head * group_size + j); }
  // Stacked row r (< rows_per_seq()) of one sequence over KV head kv_head.
  HYDRAGEN_HD long long stacked_row(int seq, int kv_head, int r) const {
    return row(seq, r / group_size, kv_head, r % group_size);
  }
  HYDRAGEN_HD int rows_per_seq() const { return q_len * group_size; }  // stacked rows per sequence and KV head

  // The inverse of row().
  HYDRAGEN_HD int seq_of(long long row) const { return static_cast<int>(row / q_heads / q_len); }
  HYDRAGEN_HD int qi_of(long long row) const { return static_cast<int>(row / q_heads % q_len); }
  HYDRAGEN_HD int head_of(long long row) const { return static_cast<int>(row % q_heads); }
  HYDRAGEN_HD int kv_head_of(long long row) const { return head_of(row) / group_size; }
};

inline QueryIndex query_index(const AttentionShape& shape) { return {shape.q_len, shape.q_heads, shape.group_size()}; }

// The causal rule: query qi (0-based) of q_len attends every token of its ancestors and all but the
// last causal_tail(q_len, qi) tokens of its leaf, so a leaf needs at least q_len - 1 tokens.
HYDRAGEN_HD int causal_tail(int q_len, int qi) { return q_len - 1 - qi; }

// Tokens query qi attends of a run of `len` tokens: all of them, or, when the run ends in the query's
// leaf, all but the causal tail.
HYDRAGEN_HD long long attended_tokens(long long len, bool ends_in_leaf, int q_len, int qi) {
  return ends_in_leaf ? len - causal_tail(q_len, qi) : len;
}

}  // namespace hydragen
