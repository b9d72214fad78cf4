#pragma once
// The all-reduces of a tensor-parallel step, measured (issue 42). A CUDA graph's collectives cannot be
// timed one by one as the step replays them, so the step's collectives are recorded as it issues them
// (RecordingCommunicator, around one eager step) and then replayed alone: the same sequence, the same
// sizes and dtypes, captured as one graph over scratch buffers and replayed back to back on every
// rank. That time is what the interconnect costs a step with nothing else running: no overlap lost to
// the step's kernels, no rank waiting for a slower one (the step minus one rank's step alone,
// measure.hpp's allreduce_derived_ms, counts those).
#include <cstdint>
#include <vector>

#include "decode/communicator.hpp"

namespace hydragen::decode {

struct Collective {
  enum class Op { sum, max } op = Op::sum;  // all_reduce_sum of dtype values, all_reduce_max of ArgmaxKeys
  DType dtype = DType::fp32;                // of a sum's values
  std::int64_t count = 0;                   // values (sum) or keys (max)
  std::int64_t bytes() const;
};

// Forwards every call to `inner` and records its collectives (all() is no collective of the step).
class RecordingCommunicator final : public Communicator {
 public:
  explicit RecordingCommunicator(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void all_reduce_sum(Runtime& runtime, const Matrix& x) override;
  void all_reduce_max(Runtime& runtime, ArgmaxKey* keys, int count) override;
  bool all(bool ok) override { return inner_.all(ok); }
  // The collectives recorded since the last take(), in order; forgets them.
  std::vector<Collective> take();

 private:
  Communicator& inner_;
  std::vector<Collective> recorded_;
};

struct CollectiveTiming {
  double ms = 0;        // the sequence once: median over runs of (a run's replays' time / replays)
  double bytes = 0;     // its operands' bytes
  double busbw_gbps = 0;  // NCCL's bus bandwidth: 2 (n - 1) / n * bytes / time (0 for one rank)
};

// NCCL's bus bandwidth (nccl-tests' all_reduce_perf): what each link carries in a ring all-reduce of
// `bytes` over `ranks` that took `seconds`, in GB/s.
double bus_bandwidth_gbps(double bytes, int ranks, double seconds);

// `sequence` replayed alone on every rank of comm (each calls it with the same sequence): issued once
// eagerly, captured as a runtime graph over scratch buffers, one warm-up run, then `runs` runs of `replays` graph
// replays back to back, each run timed on the host from a synchronized start to the last replay's end.
// Throws std::invalid_argument for an empty sequence, replays or runs below 1.
CollectiveTiming time_collectives(Runtime& runtime, Communicator& comm, const std::vector<Collective>& sequence, int replays = 10,
                                  int runs = 3);

// nccl-tests' message sizes (all_reduce_perf -b MIN -e MAX -f FACTOR): min_bytes, then each times
// `factor` while at most max_bytes, each rounded down to whole `element`-byte values (at least one).
// Throws std::invalid_argument for min_bytes < 1, min_bytes > max_bytes, factor < 2 or element < 1.
std::vector<std::int64_t> message_sizes(std::int64_t min_bytes, std::int64_t max_bytes, int factor, int element);

}  // namespace hydragen::decode
