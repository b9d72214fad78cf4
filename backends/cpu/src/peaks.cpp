#include "hydragen/cpu/peaks.hpp"

#include <omp.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <vector>

namespace hydragen::cpu {

namespace {

template <typename F>
double median_seconds(int runs, F&& f) {
  f();  // warm-up: first touch of the pages
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

Peaks measure_host_peaks() {
  // 256 MB each way: far beyond any L3, so the copy streams from memory.
  const std::size_t bytes = std::size_t{256} << 20;
  std::vector<unsigned char> src(bytes, 1), dst(bytes, 0);
  const double copy_s = median_seconds(5, [&] {
#pragma omp parallel
    {
      const std::size_t n = bytes / omp_get_num_threads(), first = n * omp_get_thread_num();
      std::memcpy(dst.data() + first, src.data() + first, omp_get_thread_num() + 1 == omp_get_num_threads() ? bytes - first : n);
    }
  });
  const int n = 1024;
  const Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n);
  Eigen::MatrixXf c(n, n);
  const double gemm_s = median_seconds(5, [&] { c.noalias() = a * b; });
  return Peaks{2.0 * n * static_cast<double>(n) * n / gemm_s, 2.0 * static_cast<double>(bytes) / copy_s};
}

std::string host_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "cpu";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  return model + " (" + std::to_string(omp_get_max_threads()) + " threads)";
}

}  // namespace hydragen::cpu
