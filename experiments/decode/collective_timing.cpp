#include "decode/collective_timing.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace hydragen::decode {

std::int64_t Collective::bytes() const {
  return count * static_cast<std::int64_t>(op == Op::sum ? dtype_size(dtype) : sizeof(ArgmaxKey));
}

void RecordingCommunicator::all_reduce_sum(Runtime& runtime, const Matrix& x) {
  recorded_.push_back({Collective::Op::sum, x.dtype, x.rows * x.cols});
  inner_.all_reduce_sum(runtime, x);
}

void RecordingCommunicator::all_reduce_max(Runtime& runtime, ArgmaxKey* keys, int count) {
  recorded_.push_back({Collective::Op::max, DType::fp32, count});
  inner_.all_reduce_max(runtime, keys, count);
}

std::vector<Collective> RecordingCommunicator::take() {
  std::vector<Collective> out;
  out.swap(recorded_);
  return out;
}

double bus_bandwidth_gbps(double bytes, int ranks, double seconds) {
  if (ranks < 2 || seconds <= 0) return 0;
  return 2.0 * (ranks - 1) / ranks * bytes / seconds / 1e9;
}

CollectiveTiming time_collectives(Runtime& runtime, Communicator& comm, const std::vector<Collective>& sequence, int replays,
                                  int runs) {
  if (sequence.empty()) throw std::invalid_argument("time_collectives: an empty sequence");
  if (replays < 1 || runs < 1) {
    throw std::invalid_argument("time_collectives: replays and runs must be at least 1, got " + std::to_string(replays) + " and " +
                                std::to_string(runs));
  }
  CollectiveTiming timing;
  std::int64_t largest = 0;
  for (const Collective& c : sequence) {
    timing.bytes += static_cast<double>(c.bytes());
    largest = std::max(largest, c.bytes());
  }
  const auto element = static_cast<std::int64_t>(dtype_size(runtime.dtype()));
  const Buffer scratch = runtime.zeros((largest + element - 1) / element);  // [largest bytes]: every operand in turn
  const auto issue = [&] {
    for (const Collective& c : sequence) {
      if (c.op == Collective::Op::sum) {
        comm.all_reduce_sum(runtime, Matrix{scratch.data(), c.dtype, 1, c.count, c.count});
      } else {
        comm.all_reduce_max(runtime, static_cast<ArgmaxKey*>(scratch.data()), static_cast<int>(c.count));
      }
    }
  };
  // Once eagerly first: NCCL connects to its peers at a size's first collective, which it cannot do
  // while the stream captures ("operation not permitted when stream is capturing").
  issue();
  runtime.synchronize();
  const std::unique_ptr<StepGraph> graph = runtime.capture(issue);
  std::vector<double> per_sequence_s;
  for (int run = 0; run < 1 + runs; ++run) {  // the first a warm-up
    runtime.synchronize();
    comm.all(true);  // the ranks start together
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < replays; ++r) graph->replay();
    runtime.synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (run > 0) per_sequence_s.push_back(s / replays);
  }
  std::sort(per_sequence_s.begin(), per_sequence_s.end());
  const double median = per_sequence_s[per_sequence_s.size() / 2];
  timing.ms = median * 1e3;
  timing.busbw_gbps = bus_bandwidth_gbps(timing.bytes, comm.size(), median);
  return timing;
}

std::vector<std::int64_t> message_sizes(std::int64_t min_bytes, std::int64_t max_bytes, int factor, int element) {
  if (min_bytes < 1 || min_bytes > max_bytes || factor < 2 || element < 1) {
    throw std::invalid_argument("message_sizes: need 1 <= min <= max, factor >= 2, element >= 1; got min " + std::to_string(min_bytes) +
                                ", max " + std::to_string(max_bytes) + ", factor " + std::to_string(factor) + ", element " +
                                std::to_string(element));
  }
  std::vector<std::int64_t> sizes;
  for (std::int64_t bytes = min_bytes;; bytes *= factor) {
    const std::int64_t whole = std::max<std::int64_t>(element, bytes / element * element);
    if (whole > max_bytes && !sizes.empty()) break;
    if (sizes.empty() || whole != sizes.back()) sizes.push_back(whole);
    if (bytes > max_bytes / factor) break;
  }
  return sizes;
}

}  // namespace hydragen::decode
