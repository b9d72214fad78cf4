#include "decode/communicator.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "decode/rank_group.hpp"

namespace hydragen::decode {
namespace {

void require_host(const Runtime& runtime) {
  if (runtime.memory().name() != "host") throw std::invalid_argument("host ranks take host runtimes, got " + runtime.name());
}

// parts[r] -> rank r's operand [rows, cols], rows ld apart: their combination, element by element in
// rank order (rank 0's value, then combine(acc, rank 1's), ...), [rows, cols] contiguous.
template <typename T, typename Combine>
std::vector<T> combine_in_rank_order(const std::vector<const void*>& parts, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                     Combine combine) {
  std::vector<T> result(static_cast<std::size_t>(rows * cols));
  for (std::size_t r = 0; r < parts.size(); ++r) {
    const auto* part = static_cast<const T*>(parts[r]);
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        T& acc = result[static_cast<std::size_t>(i * cols + j)];
        if (r == 0) {
          acc = part[i * ld + j];
        } else {
          combine(acc, part[i * ld + j]);
        }
      }
    }
  }
  return result;
}

// result [rows, cols] contiguous -> out [rows, cols], rows ld apart.
template <typename T>
void scatter(const std::vector<T>& result, T* out, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) out[i * ld + j] = result[static_cast<std::size_t>(i * cols + j)];
  }
}

void add(float& acc, float v) { acc += v; }
void keep_max(ArgmaxKey& acc, ArgmaxKey v) { acc = v > acc ? v : acc; }

void require_fp32(const Matrix& x) {
  if (x.dtype != DType::fp32) throw std::invalid_argument("host ranks sum fp32, got " + std::string(dtype_name(x.dtype)));
}

class HostCommunicator final : public Communicator {
 public:
  HostCommunicator(RankGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }

  void all_reduce_sum(Runtime& runtime, const Matrix& x) override {
    require_host(runtime);
    require_fp32(x);
    reduce<float>(x.data, x.rows, x.cols, x.ld, add);
  }

  void all_reduce_max(Runtime& runtime, ArgmaxKey* keys, int count) override {
    require_host(runtime);
    reduce<ArgmaxKey>(keys, 1, count, count, keep_max);
  }

  bool all(bool ok) override { return group_.all(rank_, ok); }

 private:
  // data [rows, cols] (ld apart) = combine over ranks, in rank order: the same result on every rank.
  template <typename T, typename Combine>
  void reduce(void* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Combine combine) {
    group_.posted()[static_cast<std::size_t>(rank_)] = data;
    group_.wait();  // every rank's operand posted
    const std::vector<T> result = combine_in_rank_order<T>(group_.posted(), rows, cols, ld, combine);
    group_.wait();  // every rank has read every operand
    scatter(result, static_cast<T*>(data), rows, cols, ld);
  }

  RankGroup& group_;
  const int rank_;
};

// Host ranks as processes: the operands through the process group, combined on every rank in rank
// order as HostCommunicator combines them (the same bits).
class ProcessHostCommunicator final : public Communicator {
 public:
  explicit ProcessHostCommunicator(ProcessGroup& group) : group_(group) {}
  int rank() const override { return group_.rank(); }
  int size() const override { return group_.size(); }

  void all_reduce_sum(Runtime& runtime, const Matrix& x) override {
    require_host(runtime);
    require_fp32(x);
    reduce<float>(static_cast<float*>(x.data), x.rows, x.cols, x.ld, add);
  }

  void all_reduce_max(Runtime& runtime, ArgmaxKey* keys, int count) override {
    require_host(runtime);
    reduce<ArgmaxKey>(keys, 1, count, count, keep_max);
  }

  bool all(bool ok) override { return group_.all(ok); }

 private:
  template <typename T, typename Combine>
  void reduce(T* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Combine combine) {
    std::vector<T> mine(static_cast<std::size_t>(rows * cols));  // [rows, cols] contiguous
    for (std::int64_t i = 0; i < rows; ++i) std::copy(data + i * ld, data + i * ld + cols, mine.begin() + i * cols);
    const std::vector<std::string> all =
        group_.all_gather(std::string(reinterpret_cast<const char*>(mine.data()), mine.size() * sizeof(T)));
    std::vector<const void*> parts;
    for (const std::string& part : all) parts.push_back(part.data());
    scatter(combine_in_rank_order<T>(parts, rows, cols, cols, combine), data, rows, cols, ld);
  }

  ProcessGroup& group_;
};

}  // namespace

void run_host_process_rank(ProcessGroup& group, const std::function<void(Communicator&)>& body) {
  ProcessHostCommunicator communicator(group);
  body(communicator);
}

void run_host_ranks(int size, const std::function<void(Communicator&)>& body) {
  if (size < 1) throw std::invalid_argument("tensor parallel: at least one rank, got " + std::to_string(size));
  RankGroup group(size);
  run_rank_threads(group, [&](int rank) {
    HostCommunicator communicator(group, rank);
    body(communicator);
  });
}

}  // namespace hydragen::decode
