#include <omp.h>

#include <algorithm>

#include "hydragen/merge.hpp"

#include "cpu_common.hpp"
#include "plans.hpp"

namespace hydragen::cpu {

namespace {

// Shortest chunk a segment is split into for parallelism: below this the per-chunk merge and query
// gather stop being negligible next to the chunk's GEMMs.
constexpr long long kMinChunkTokens = 512;

// One unit of work: the sequences below `segment` attend tokens [begin, end) of one KV head.
struct Task {
  int segment;
  int kv_head;
  long long begin, end;
  int rows;            // sequences below the segment x q_len x g
  std::size_t result;  // index into results_
};

// Where a sequence finds its partials: the task's result and the sequence's first row in it.
struct Contribution {
  std::size_t result;
  int first_row;
};

// Query rows of the widest segment: the stacked queries of every sequence below it.
int max_rows_below(const AttentionShape& shape, const SharingTree& tree) {
  std::size_t widest = 1;
  for (int segment = 0; segment < tree.num_segments(); ++segment) widest = std::max(widest, tree.seqs_below(segment).size());
  return static_cast<int>(widest) * shape.q_len * shape.group_size();
}

// Chunks a segment of `len` tokens is split into: enough that the shared segments alone keep
// every thread busy, none under kMinChunkTokens.
long long chunks_of(long long len, int threads, int kv_heads) {
  const long long max_chunks = std::max(1, (2 * threads + kv_heads - 1) / kv_heads);
  return std::clamp<long long>(len / kMinChunkTokens, 1, max_chunks);
}

class HydragenPlan final : public CpuPlan {
 public:
  HydragenPlan(const AttentionShape& shape, const SharingTree& tree)
      : CpuPlan(shape, tree, max_rows_below(shape, tree)) {
    const int rows_per_seq = shape.q_len * shape.group_size();
    contributions_.resize(static_cast<std::size_t>(shape.num_seqs) * shape.kv_heads);
    for (int segment = 0; segment < tree.num_segments(); ++segment) {
      const long long len = tree.length(segment);
      if (len == 0) continue;  // contributes nothing: the merge identity
      const auto& seqs = tree.seqs_below(segment);
      const int rows = static_cast<int>(seqs.size()) * rows_per_seq;
      const long long chunks = chunks_of(len, threads_, shape.kv_heads);
      for (int kv_head = 0; kv_head < shape.kv_heads; ++kv_head) {
        for (long long c = 0; c < chunks; ++c) {
          const std::size_t result = tasks_.size();
          tasks_.push_back(Task{segment, kv_head, len * c / chunks, len * (c + 1) / chunks, rows, result});
          for (std::size_t i = 0; i < seqs.size(); ++i) {
            contributions_[static_cast<std::size_t>(seqs[i]) * shape.kv_heads + kv_head].push_back(
                Contribution{result, static_cast<int>(i) * rows_per_seq});
          }
        }
      }
    }
    results_.resize(tasks_.size());
    for (const Task& t : tasks_) results_[t.result].reset(t.rows, shape.head_dim);
  }

  void run(const AttentionInputs& in, const AttentionOutputs& out, Stream) override {
    prepare(in, out);
    const int rows_per_seq = shape_.q_len * shape_.group_size();
#pragma omp parallel num_threads(threads_)
    {
      Workspace& ws = workspaces_[omp_get_thread_num()];
      RowMatrix q;
      // Phase 1: every segment chunk, all queries below it in one matrix.
#pragma omp for schedule(dynamic)
      for (std::size_t i = 0; i < tasks_.size(); ++i) {
        const Task& t = tasks_[i];
        gather_rows(shape_, q32_.data(), tree_.seqs_below(t.segment), t.kv_head, q);
        Partial& result = results_[t.result];
        result.reset(t.rows, shape_.head_dim);
        const long long len = lengths_[t.segment];  // a leaf may hold fewer tokens than planned
        attend_tokens(q, kv_slice(shape_, in.k[t.segment], t.kv_head), kv_slice(shape_, in.v[t.segment], t.kv_head),
                      t.begin, std::min(t.end, len), row_limits(shape_, tree_.seqs_below(t.segment).size(), len, tree_.is_leaf(t.segment)),
                      shape_.scale, result, ws);
      }
      // Phase 2: each (sequence, KV head) merges the partials on its path.
      Partial acc;
      const int pairs = shape_.num_seqs * shape_.kv_heads;
#pragma omp for schedule(static)
      for (int pair = 0; pair < pairs; ++pair) {
        acc.reset(rows_per_seq, shape_.head_dim);
        for (const Contribution& c : contributions_[pair]) {
          const Partial& part = results_[c.result];
          for (int r = 0; r < rows_per_seq; ++r) {
            merge_into(acc.o.row(r).data(), acc.lse[r], part.o.row(c.first_row + r).data(), part.lse[c.first_row + r],
                       shape_.head_dim);
          }
        }
        write_rows(shape_, acc, 0, pair / shape_.kv_heads, pair % shape_.kv_heads, out);
      }
    }
  }

 private:
  std::vector<Task> tasks_;
  std::vector<std::vector<Contribution>> contributions_;  // [B * Hkv]
  std::vector<Partial> results_;                          // one per task: [rows, D] O and [rows] LSE
};

}  // namespace

std::size_t hydragen_workspace_bytes(const AttentionShape& shape, const SharingTree& tree) {
  const std::size_t rows_per_seq = static_cast<std::size_t>(shape.q_len) * shape.group_size();
  std::size_t results = 0, contributions = 0, tasks = 0;  // elements of each
  for (int segment = 0; segment < tree.num_segments(); ++segment) {
    const long long len = tree.length(segment);
    if (len == 0) continue;
    const std::size_t seqs = tree.seqs_below(segment).size();
    const auto n = static_cast<std::size_t>(chunks_of(len, omp_get_max_threads(), shape.kv_heads)) * shape.kv_heads;
    tasks += n;
    results += n * seqs * rows_per_seq * (static_cast<std::size_t>(shape.head_dim) + 1);  // Partial: O and LSE
    contributions += n * seqs;
  }
  return cpu_plan_bytes(shape, max_rows_below(shape, tree)) + results * sizeof(float) +
         contributions * sizeof(Contribution) + tasks * (sizeof(Task) + sizeof(Partial)) +
         static_cast<std::size_t>(shape.num_seqs) * shape.kv_heads * sizeof(std::vector<Contribution>);
}

std::unique_ptr<AttentionPlan> make_hydragen_plan(const AttentionShape& shape, const SharingTree& tree) {
  return std::make_unique<HydragenPlan>(shape, tree);
}

}  // namespace hydragen::cpu
