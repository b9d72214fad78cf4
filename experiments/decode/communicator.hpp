#pragma once
// The collectives of a tensor-parallel decoder (Megatron-style, issue 21): every rank runs the same
// step over its shard of the model (decoder.hpp: DecoderOptions::comm) and calls these in the same
// order. A decoder without one runs its shard alone (hydragen-decode --tp N: one GPU's share timed,
// the all-reduces left out).
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "decode/runtime.hpp"

namespace hydragen::decode {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // x = the sum over ranks of every rank's x: x [T, H] in the runtime's memory, the same on every rank
  // after (the residual stream after a row-parallel projection).
  virtual void all_reduce_sum(Runtime& runtime, const Matrix& x) = 0;
  // tokens[t] = the vocabulary index of row t's largest logit over every rank's rows, the lowest
  // index on ties: logits [T, rows] of this rank's shard of the LM head, whose first `valid` rows are
  // tokens rank * rows ... (the rest Megatron's padding); tokens [T] int in the runtime's memory.
  virtual void argmax(Runtime& runtime, const Matrix& logits, std::int64_t valid, int* tokens) = 0;
};

// `size` ranks as threads of this process, each on a host runtime: sums and maxima through host
// memory, in rank order (every rank's result bit for bit the same). Runs body(rank, communicator) on
// each and rethrows the first exception after every thread has stopped (a rank that throws releases
// the others from their collectives with an error instead of a hang).
void run_host_ranks(int size, const std::function<void(Communicator&)>& body);

}  // namespace hydragen::decode
