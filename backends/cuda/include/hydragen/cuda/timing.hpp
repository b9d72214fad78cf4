#pragma once
// GPU timing by the measuring protocol of DESIGN.md section 6: the work is captured once in a CUDA
// graph and replayed; each replay is timed with CUDA events; L2 is flushed before every replay,
// outside the timed region, by writing a buffer twice its size and then reading it back (so that
// the lines L2 holds are clean: otherwise the flush's own write-backs land in the timed region,
// docs/design.md, "The L2 flush"); the median is reported with min and max. The machine's two
// ceilings are measured in the same process.
#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

#include "hydragen/cost_model.hpp"
#include "hydragen/dtype.hpp"

namespace hydragen::cuda {

struct TimingOptions {
  int warmup = 3;     // eager runs before capture (module load, first-touch, pointer binding)
  int replays = 50;   // timed graph replays
  bool flush_l2 = true;
};

struct TimingResult {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int replays = 0;
};

// The median (the upper one of an even count), min and max of timed runs in ms; std::invalid_argument
// for none.
TimingResult summarize(std::vector<double> ms);

// What `enqueue` puts on `stream`, captured once as a CUDA graph and replayed by launch(). Move-only.
class CapturedGraph {
 public:
  CapturedGraph(const std::function<void(cudaStream_t)>& enqueue, cudaStream_t stream);
  ~CapturedGraph();
  CapturedGraph(CapturedGraph&& other) noexcept;
  CapturedGraph& operator=(CapturedGraph&&) = delete;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  void launch(cudaStream_t stream) const;

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// `enqueue` puts the work on the stream it is given (e.g. plan->run(..., Stream{stream})).
TimingResult time_graph(const std::function<void(cudaStream_t)>& enqueue, const TimingOptions& options = {});

// Times single runs of `enqueue` on a private stream with CUDA events, flushing L2 before each run
// outside the timed region. For harnesses that own the loop (Google Benchmark's manual time).
class RunTimer {
 public:
  explicit RunTimer(bool flush_l2 = true);
  ~RunTimer();
  RunTimer(const RunTimer&) = delete;
  RunTimer& operator=(const RunTimer&) = delete;
  double time_ms(const std::function<void(cudaStream_t)>& enqueue);
  // The flush's buffer on the current device (what a RunTimer that flushes allocates): twice its L2.
  static std::size_t flush_bytes();
  cudaStream_t stream() const { return stream_; }

 private:
  void release() noexcept;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  void* flush_ = nullptr;  // [flush_bytes_] written, then read, before each run
  std::size_t flush_bytes_ = 0;
  int read_blocks_ = 0;  // grid of the read after the write
  int runs_ = 0;
};

// Fills `count` elements of `dtype` (fp32, fp16, bf16) at `data` on `stream` with values spread evenly
// over [-sqrt 3, sqrt 3), unit variance, from a hash of each index and `seed`: timed work on values
// like real inputs', since zeros run faster (the tensor cores draw less power).
void fill_random(void* data, DType dtype, std::size_t count, unsigned seed, cudaStream_t stream);

// Device-to-device copy bandwidth (bytes read + written per second) and cuBLAS bf16 GEMM 8192^3
// FLOP/s on random data, each the median of 10 timed runs.
Peaks measure_peaks();

}  // namespace hydragen::cuda
