#pragma once
// Parallel loops on std::threads (core uses the standard library
// only). Used where problem generation and encoding touch billions of elements in the sweeps.
#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace hydragen::detail {

template <typename F>
void parallel_chunks(std::size_t n, F&& body) {
  constexpr std::size_t kMinChunk = std::size_t{1} << 20;  // below this a thread costs more than it saves
  const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads = std::min(hw, std::max<std::size_t>(1, n / kMinChunk));
  if (threads <= 1) {
    body(std::size_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] { body(n * t / threads, n * (t + 1) / threads); });
  }
  for (std::thread& th : pool) th.join();
}

// body(i) for every i in [0, n), items spread over the threads; for many independent small tasks.
template <typename F>
void parallel_items(std::size_t n, F&& body) {
  const std::size_t threads = std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), n);
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (std::size_t i = t; i < n; i += threads) body(i);
    });
  }
  for (std::thread& th : pool) th.join();
}

}  // namespace hydragen::detail
