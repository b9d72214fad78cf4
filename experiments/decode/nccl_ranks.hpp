#pragma once
// Tensor-parallel ranks on the GPUs of one host through NCCL (issue 21; built where CMake finds NCCL,
// HYDRAGEN_WITH_NCCL): one thread per GPU in this
// process, communicators from ncclCommInitAll. Threads rather than processes: no launcher (MPI,
// torchrun) on the machines this runs on, one CSV writer and one progress line, the weights read
// once, and a rank's failure reaches the others in memory (communicator.hpp's contract).
#include <functional>

#include "decode/communicator.hpp"

namespace hydragen::decode {

// Runs body(communicator) on GPUs 0 ... gpus - 1, each on its own thread with its device current;
// the collectives are NCCL's, enqueued on the stream of the runtime they are given (capturable in a
// CUDA graph). Sets NCCL_NVLS_ENABLE=0 in the environment first (NVLink multicast can take shared GPUs
// out of service; children inherit it). Rethrows the first rank's failure after every thread has
// stopped; ranks stuck in a collective their failed peer never joined are released by aborting the
// communicators. Throws std::invalid_argument when there are fewer GPUs, hydragen::Error from NCCL
// with its message.
void run_nccl_ranks(int gpus, const std::function<void(Communicator&)>& body);

}  // namespace hydragen::decode
