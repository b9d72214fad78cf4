#pragma once
// The calling thread's CPU time, for the tests that bound a single-threaded computation's work (a
// guard against a quadratic build, not a benchmark): other processes on a loaded machine (a parallel
// ctest, CI's two cores) stretch its wall time fourfold, not its CPU time.
#include <ctime>

namespace hydragen {

inline double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace hydragen
