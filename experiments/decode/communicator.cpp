#include "decode/communicator.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "decode/rank_group.hpp"

namespace hydragen::decode {
namespace {

void require_host(const Runtime& runtime) {
  if (runtime.memory().name() != "host") throw std::invalid_argument("host ranks take host runtimes, got " + runtime.name());
}

class HostCommunicator final : public Communicator {
 public:
  HostCommunicator(RankGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }

  void all_reduce_sum(Runtime& runtime, const Matrix& x) override {
    require_host(runtime);
    if (x.dtype != DType::fp32) throw std::invalid_argument("host ranks sum fp32, got " + std::string(dtype_name(x.dtype)));
    reduce<float>(x.data, x.rows, x.cols, x.ld, [](float& acc, float v) { acc += v; });
  }

  void all_reduce_max(Runtime& runtime, ArgmaxKey* keys, int count) override {
    require_host(runtime);
    reduce<ArgmaxKey>(keys, 1, count, count, [](ArgmaxKey& acc, ArgmaxKey v) { acc = v > acc ? v : acc; });
  }

  bool all(bool ok) override { return group_.all(rank_, ok); }

 private:
  // data [rows, cols] (ld apart) = combine over ranks, in rank order: the same result on every rank.
  template <typename T, typename Combine>
  void reduce(void* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Combine combine) {
    group_.posted()[static_cast<std::size_t>(rank_)] = data;
    group_.wait();  // every rank's operand posted
    std::vector<T> result(static_cast<std::size_t>(rows * cols));
    for (std::size_t r = 0; r < group_.posted().size(); ++r) {
      const auto* part = static_cast<const T*>(group_.posted()[r]);
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
    group_.wait();  // every rank has read every operand
    auto* out = static_cast<T*>(data);
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) out[i * ld + j] = result[static_cast<std::size_t>(i * cols + j)];
    }
  }

  RankGroup& group_;
  const int rank_;
};

}  // namespace

void run_host_ranks(int size, const std::function<void(Communicator&)>& body) {
  if (size < 1) throw std::invalid_argument("tensor parallel: at least one rank, got " + std::to_string(size));
  RankGroup group(size);
  run_rank_threads(group, [&](int rank) {
    HostCommunicator communicator(group, rank);
    body(communicator);
  });
}

}  // namespace hydragen::decode
