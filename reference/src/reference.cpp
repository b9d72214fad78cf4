#include "hydragen/reference/reference.hpp"

#include <Eigen/Dense>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "hydragen/merge.hpp"

namespace hydragen {

namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;
// One KV head's rows inside a [len, Hkv, D] tensor: a len x D matrix with row stride Hkv * D.
using KvView = Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>;

// Attention of `q` (rows x D) over keys/values (len x D); row r attends the first attended[r] keys.
// Writes the normalized output (rows x D) and LSE per row; a row with no keys gets O = 0, LSE = -inf.
void attend(const Matrix& q, const KvView& k, const KvView& v, const std::vector<long long>& attended, double scale,
            Matrix& o, Vector& lse) {
  const Matrix scores = (q * k.transpose()) * scale;
  o.setZero(q.rows(), q.cols());
  lse.resize(q.rows());
  for (Eigen::Index r = 0; r < q.rows(); ++r) {
    const auto n = static_cast<Eigen::Index>(attended[r]);
    if (n == 0) {
      lse[r] = -std::numeric_limits<double>::infinity();
      continue;
    }
    const auto row = scores.row(r).head(n);
    const double m = row.maxCoeff();
    const Eigen::RowVectorXd p = (row.array() - m).exp().matrix();
    const double sum = p.sum();
    o.row(r) = (p * v.topRows(n)) / sum;
    lse[r] = m + std::log(sum);
  }
}

// The q_len * g stacked query rows of one (sequence, KV head) (indexing.hpp).
Matrix gather_queries(const AttentionShape& shape, const double* q, int seq, int kv_head) {
  const QueryIndex index = query_index(shape);
  const int d = shape.head_dim;
  Matrix rows(index.rows_per_seq(), d);
  for (int r = 0; r < index.rows_per_seq(); ++r) {
    rows.row(r) = Eigen::Map<const Eigen::RowVectorXd>(q + index.stacked_row(seq, kv_head, r) * d, d);
  }
  return rows;
}

void scatter_outputs(const AttentionShape& shape, const Matrix& o, const Vector& lse, int seq, int kv_head,
                     double* out_o, double* out_lse) {
  const QueryIndex index = query_index(shape);
  const int d = shape.head_dim;
  for (int r = 0; r < index.rows_per_seq(); ++r) {
    const long long row = index.stacked_row(seq, kv_head, r);
    Eigen::Map<Eigen::RowVectorXd>(out_o + row * d, d) = o.row(r);
    out_lse[row] = lse[r];
  }
}

// Keys each stacked query row attends in a segment of `len` tokens.
std::vector<long long> attended_counts(const AttentionShape& shape, long long len, bool is_leaf) {
  std::vector<long long> n(static_cast<std::size_t>(shape.q_len) * shape.group_size());
  for (std::size_t r = 0; r < n.size(); ++r) {
    n[r] = attended_tokens(len, is_leaf, shape.q_len, static_cast<int>(r) / shape.group_size());
  }
  return n;
}

KvView kv_view(const AttentionShape& shape, const void* data, long long len, int kv_head) {
  const auto* base = static_cast<const double*>(data);
  return KvView(base == nullptr ? nullptr : base + static_cast<std::size_t>(kv_head) * shape.head_dim,
                static_cast<Eigen::Index>(len), shape.head_dim,
                Eigen::OuterStride<>(static_cast<Eigen::Index>(shape.kv_heads) * shape.head_dim));
}

class ReferencePlan final : public AttentionPlan {
 public:
  ReferencePlan(const AttentionShape& shape, const SharingTree& tree, bool decomposed)
      : shape_(shape), tree_(tree), decomposed_(decomposed) {}

  void run(const AttentionInputs& in, const AttentionOutputs& out, Stream) override {
    check_io(shape_, tree_, in, out);
    const std::vector<long long> lengths = run_lengths(shape_, tree_, in);
    const int pairs = shape_.num_seqs * shape_.kv_heads;
#pragma omp parallel for schedule(dynamic)
    for (int pair = 0; pair < pairs; ++pair) {
      const int seq = pair / shape_.kv_heads, kv_head = pair % shape_.kv_heads;
      const Matrix q = gather_queries(shape_, static_cast<const double*>(in.q.data), seq, kv_head);
      Matrix o;
      Vector lse;
      if (decomposed_) {
        run_decomposed(in, lengths, q, seq, kv_head, o, lse);
      } else {
        run_concatenated(in, lengths, q, seq, kv_head, o, lse);
      }
      scatter_outputs(shape_, o, lse, seq, kv_head, static_cast<double*>(out.o.data), static_cast<double*>(out.lse.data));
    }
  }

 private:
  // The definition: copy the path's keys and values into one matrix, one softmax over all of it.
  void run_concatenated(const AttentionInputs& in, const std::vector<long long>& lengths, const Matrix& q, int seq,
                        int kv_head, Matrix& o, Vector& lse) const {
    long long len = 0;
    for (int segment : tree_.path(seq)) len += lengths[segment];
    Matrix k(len, shape_.head_dim), v(len, shape_.head_dim);
    Eigen::Index row = 0;
    for (int segment : tree_.path(seq)) {
      const long long n = lengths[segment];
      k.middleRows(row, n) = kv_view(shape_, in.k[segment].data, n, kv_head);
      v.middleRows(row, n) = kv_view(shape_, in.v[segment].data, n, kv_head);
      row += n;
    }
    const KvView kall(k.data(), len, shape_.head_dim, Eigen::OuterStride<>(shape_.head_dim));
    const KvView vall(v.data(), len, shape_.head_dim, Eigen::OuterStride<>(shape_.head_dim));
    const long long leaf_len = lengths[tree_.leaf(seq)];
    std::vector<long long> n = attended_counts(shape_, leaf_len, true);
    for (long long& c : n) c += len - leaf_len;
    attend(q, kall, vall, n, shape_.scale, o, lse);
  }

  // Per segment, then the one merge routine, in fp64.
  void run_decomposed(const AttentionInputs& in, const std::vector<long long>& lengths, const Matrix& q, int seq,
                      int kv_head, Matrix& o, Vector& lse) const {
    o.setZero(q.rows(), q.cols());
    lse.setConstant(q.rows(), -std::numeric_limits<double>::infinity());
    Matrix part_o;
    Vector part_lse;
    for (int segment : tree_.path(seq)) {
      const long long n = lengths[segment];
      attend(q, kv_view(shape_, in.k[segment].data, n, kv_head), kv_view(shape_, in.v[segment].data, n, kv_head),
             attended_counts(shape_, n, tree_.is_leaf(segment)), shape_.scale, part_o, part_lse);
      for (Eigen::Index r = 0; r < q.rows(); ++r) {
        merge_into(o.row(r).data(), lse[r], part_o.row(r).data(), part_lse[r], shape_.head_dim);
      }
    }
  }

  AttentionShape shape_;
  SharingTree tree_;
  bool decomposed_;
};

// Each of the threads holds, for its (sequence, KV head): the stacked queries, the scores and
// weights over the longest run it attends (the concatenated path, or the longest segment), the
// concatenated K and V (the definition only), the output and the partial being merged.
std::size_t reference_workspace_bytes(const AttentionShape& shape, const SharingTree& tree, bool decomposed) {
  long long longest = 0;
  for (int s = 0; s < tree.num_seqs(); ++s) {
    if (!decomposed) longest = std::max(longest, tree.path_length(s));
    for (int segment : tree.path(s)) longest = std::max<long long>(longest, tree.length(segment));
  }
  const auto rows = static_cast<std::size_t>(shape.q_len) * shape.group_size();
  const auto d = static_cast<std::size_t>(shape.head_dim), n = static_cast<std::size_t>(longest);
  const std::size_t per_thread = rows * n + n + (decomposed ? 0 : 2 * n * d) + 3 * rows * (d + 1);
  const auto threads = std::min<std::size_t>(static_cast<std::size_t>(omp_get_max_threads()),
                                             static_cast<std::size_t>(shape.num_seqs) * shape.kv_heads);
  return threads * per_thread * sizeof(double);
}

Support fp64_only(const AttentionShape& shape, const SharingTree&) {
  if (shape.dtype != DType::fp64) {
    return Support::no("dtype " + std::string(dtype_name(shape.dtype)) + " (the reference computes in fp64: pass fp64 tensors)");
  }
  return Support::yes();
}

}  // namespace

void register_reference_backends(BackendRegistry& registry) {
  auto planner = [](bool decomposed) {
    return without_options([decomposed](const AttentionShape& shape, const SharingTree& tree) -> std::unique_ptr<AttentionPlan> {
      return std::make_unique<ReferencePlan>(shape, tree, decomposed);
    });
  };
  auto workspace = [](bool decomposed) {
    return without_options([decomposed](const AttentionShape& shape, const SharingTree& tree) {
      return reference_workspace_bytes(shape, tree, decomposed);
    });
  };
  registry.add(make_backend({"reference",
                             "fp64 Eigen: softmax over each sequence's concatenated path (the definition); dtypes fp64; any D, any tree",
                             &host_memory(), fp64_only, planner(false), workspace(false)}));
  registry.add(make_backend({"reference-decomposed",
                             "fp64 Eigen: per-segment attention + LSE merge; equals `reference` to ~1e-13; dtypes fp64; any D, any tree",
                             &host_memory(), fp64_only, planner(true), workspace(true)}));
}

}  // namespace hydragen
