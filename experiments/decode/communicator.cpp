#include "decode/communicator.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace hydragen::decode {
namespace {

// What the host ranks share: a barrier that a failing rank can break, and each rank's posted operand.
class HostGroup {
 public:
  explicit HostGroup(int size) : size_(size), posted_(static_cast<std::size_t>(size)), best_(static_cast<std::size_t>(size)) {}

  int size() const { return size_; }

  // Returns once every rank has arrived; throws once any rank has failed.
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (aborted_) throw std::runtime_error("tensor parallel: another rank failed");
    const long generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    changed_.wait(lock, [&] { return generation_ != generation || aborted_; });
    if (generation_ == generation) throw std::runtime_error("tensor parallel: another rank failed");
  }

  void abort() {
    const std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    changed_.notify_all();
  }

  std::vector<Matrix>& posted() { return posted_; }                           // [size]: each rank's x
  std::vector<std::vector<std::pair<float, int>>>& best() { return best_; }  // [size][T]: (logit, token)

 private:
  const int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  long generation_ = 0;
  bool aborted_ = false;
  std::vector<Matrix> posted_;
  std::vector<std::vector<std::pair<float, int>>> best_;
};

float at(const Matrix& m, std::int64_t row, std::int64_t col) { return static_cast<const float*>(m.data)[row * m.ld + col]; }

void require_host_fp32(const Runtime& runtime, const Matrix& m) {
  if (runtime.memory().name() != "host" || m.dtype != DType::fp32) {
    throw std::invalid_argument("host ranks take host fp32 runtimes, got " + runtime.name());
  }
}

class HostCommunicator final : public Communicator {
 public:
  HostCommunicator(HostGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }

  void all_reduce_sum(Runtime& runtime, const Matrix& x) override {
    require_host_fp32(runtime, x);
    group_.posted()[static_cast<std::size_t>(rank_)] = x;
    group_.wait();  // every rank's x posted
    std::vector<float> sum(static_cast<std::size_t>(x.rows * x.cols), 0.0f);
    for (const Matrix& part : group_.posted()) {  // rank order: the same sum on every rank
      for (std::int64_t i = 0; i < x.rows; ++i) {
        for (std::int64_t j = 0; j < x.cols; ++j) sum[static_cast<std::size_t>(i * x.cols + j)] += at(part, i, j);
      }
    }
    group_.wait();  // every rank has read every x
    auto* out = static_cast<float*>(x.data);
    for (std::int64_t i = 0; i < x.rows; ++i) {
      for (std::int64_t j = 0; j < x.cols; ++j) out[i * x.ld + j] = sum[static_cast<std::size_t>(i * x.cols + j)];
    }
  }

  void argmax(Runtime& runtime, const Matrix& logits, std::int64_t valid, int* tokens) override {
    require_host_fp32(runtime, logits);
    std::vector<std::pair<float, int>>& mine = group_.best()[static_cast<std::size_t>(rank_)];
    mine.assign(static_cast<std::size_t>(logits.rows), {0.0f, -1});
    for (std::int64_t t = 0; t < logits.rows; ++t) {
      for (std::int64_t c = 0; c < valid; ++c) {
        const float v = at(logits, t, c);
        if (mine[static_cast<std::size_t>(t)].second < 0 || v > mine[static_cast<std::size_t>(t)].first) {
          mine[static_cast<std::size_t>(t)] = {v, static_cast<int>(rank_ * logits.cols + c)};
        }
      }
    }
    group_.wait();  // every rank's best posted
    std::vector<int> chosen(static_cast<std::size_t>(logits.rows), -1);
    for (std::int64_t t = 0; t < logits.rows; ++t) {
      float top = 0.0f;
      for (const auto& rank_best : group_.best()) {  // rank order, strictly greater: the lowest token on ties
        const auto [v, token] = rank_best[static_cast<std::size_t>(t)];
        if (token >= 0 && (chosen[static_cast<std::size_t>(t)] < 0 || v > top)) {
          top = v;
          chosen[static_cast<std::size_t>(t)] = token;
        }
      }
    }
    group_.wait();  // every rank has read every best
    for (std::size_t t = 0; t < chosen.size(); ++t) tokens[t] = chosen[t];
  }

 private:
  HostGroup& group_;
  const int rank_;
};

}  // namespace

void run_host_ranks(int size, const std::function<void(Communicator&)>& body) {
  if (size < 1) throw std::invalid_argument("tensor parallel: at least one rank, got " + std::to_string(size));
  HostGroup group(size);
  std::mutex failed;
  std::exception_ptr first;  // the failure that stopped the others, not their "another rank failed"
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        HostCommunicator communicator(group, r);
        body(communicator);
      } catch (...) {
        {
          const std::lock_guard<std::mutex> lock(failed);
          if (!first) first = std::current_exception();
        }
        group.abort();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace hydragen::decode
