#pragma once
// What the ranks of one process share (communicator.cpp, nccl_ranks.cpp): a barrier that a failing
// rank breaks, the first failure, and a slot per rank for posting values.
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

namespace hydragen::decode {

class RankGroup {
 public:
  explicit RankGroup(int size) : size_(size), posted_(static_cast<std::size_t>(size)) {}

  int size() const { return size_; }
  // [size]: what each rank posted before the barrier it is reading after.
  std::vector<const void*>& posted() { return posted_; }

  // Returns once every rank has arrived; throws once any rank has failed.
  void wait();
  // Whether every rank passed ok = true (each rank calls it with its own answer; Communicator::all).
  bool all(int rank, bool ok);
  // Records the first failure and releases every waiting rank with an error.
  void fail(std::exception_ptr error);
  bool failed();
  std::exception_ptr first_failure();

 private:
  const int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  long generation_ = 0;
  std::exception_ptr failure_;
  std::vector<const void*> posted_;
};

// Runs body(rank) on group.size() threads; a throwing rank's exception goes to group.fail(). Ranks
// blocked elsewhere than the group's barrier (a GPU waiting for a peer that failed before its
// collective) are released by stuck(), called once from this thread when ranks are still running
// `grace` seconds after a failure. Rethrows the first failure after every thread has stopped.
void run_rank_threads(RankGroup& group, const std::function<void(int)>& body, const std::function<void()>& stuck = {},
                      double grace = 30);

}  // namespace hydragen::decode
