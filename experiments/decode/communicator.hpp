#pragma once
// The collectives of a tensor-parallel decoder (Megatron-style, issue 21): every rank runs the same
// step over its shard of the model (decoder.hpp: DecoderOptions::comm) and calls these in the same
// order. Two implementations: host runtimes' ranks (here; the tests' reference), as threads or as
// processes, and GPUs' ranks through NCCL (nccl_ranks.hpp), as threads of one process or processes. A decoder without one runs
// its shard alone (hydragen-decode --tp N: one GPU's share timed, the all-reduces left out).
#include <functional>

#include "decode/process_group.hpp"
#include "decode/runtime.hpp"

namespace hydragen::decode {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // x = the sum over ranks of every rank's x, enqueued on the runtime's stream: x [T, H] in the
  // runtime's memory (the residual stream after a row-parallel projection).
  virtual void all_reduce_sum(Runtime& runtime, const Matrix& x) = 0;
  // keys[i] = the largest of every rank's keys[i] (argmax_key.hpp: the vocabulary-parallel argmax):
  // keys [count] in the runtime's memory, enqueued on its stream.
  virtual void all_reduce_max(Runtime& runtime, ArgmaxKey* keys, int count) = 0;
  // Whether `ok` is true on every rank, on the host, now (a point admitted, a decoder built): the
  // ranks agree before they enter collectives one of them would never reach.
  virtual bool all(bool ok) = 0;
};

// `size` ranks as threads of this process, each on a host runtime: sums and maxima through host
// memory, in rank order (every rank's result bit for bit the same). Runs body(communicator) on each
// and rethrows the first exception after every thread has stopped (a rank that throws releases the
// others from their collectives with an error instead of a hang).
void run_host_ranks(int size, const std::function<void(Communicator&)>& body);

// This process as host rank group.rank() of group.size() processes (process_group.hpp): runs
// body(communicator), its sums and maxima the bits run_host_ranks gives, through the group's TCP.
void run_host_process_rank(ProcessGroup& group, const std::function<void(Communicator&)>& body);

}  // namespace hydragen::decode
