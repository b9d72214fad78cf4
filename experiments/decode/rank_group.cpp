#include "decode/rank_group.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

namespace hydragen::decode {

void RankGroup::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failure_) throw std::runtime_error("tensor parallel: another rank failed");
  const long generation = generation_;
  if (++arrived_ == size_) {
    arrived_ = 0;
    ++generation_;
    changed_.notify_all();
    return;
  }
  changed_.wait(lock, [&] { return generation_ != generation || failure_; });
  if (generation_ == generation) throw std::runtime_error("tensor parallel: another rank failed");
}

bool RankGroup::all(int rank, bool ok) {
  const bool mine = ok;
  posted_[static_cast<std::size_t>(rank)] = &mine;
  wait();  // every rank's answer posted
  bool every = true;
  for (const void* p : posted_) every = every && *static_cast<const bool*>(p);
  wait();  // every rank has read every answer
  return every;
}

void RankGroup::fail(std::exception_ptr error) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_) failure_ = std::move(error);
  changed_.notify_all();
}

bool RankGroup::failed() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<bool>(failure_);
}

std::exception_ptr RankGroup::first_failure() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void run_rank_threads(RankGroup& group, const std::function<void(int)>& body, const std::function<void()>& stuck,
                      double grace) {
  std::mutex mutex;
  std::condition_variable changed;
  int running = group.size();
  std::vector<std::thread> threads;
  for (int r = 0; r < group.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        group.fail(std::current_exception());  // the first failure, not the others' "another rank failed"
      }
      const std::lock_guard<std::mutex> lock(mutex);
      --running;
      changed.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    // Wake every second to look for a failure (set under the group's lock, not this one).
    while (running > 0 && !group.failed()) changed.wait_for(lock, std::chrono::seconds(1));
    if (running > 0 && !changed.wait_for(lock, std::chrono::duration<double>(grace), [&] { return running == 0; }) && stuck) {
      stuck();
    }
  }
  for (std::thread& t : threads) t.join();
  if (std::exception_ptr first = group.first_failure()) std::rethrow_exception(first);
}

}  // namespace hydragen::decode
