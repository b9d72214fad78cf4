#pragma once
// Tensor-parallel ranks on GPUs through NCCL (issue 21; built where CMake finds NCCL,
// HYDRAGEN_WITH_NCCL), two ways. One thread per GPU of this host, communicators from ncclCommInitAll:
// no launcher needed, and a rank's failure reaches the others in memory (communicator.hpp's
// contract). Or one process per GPU (issue 42), started by a launcher on one host or several, the
// NCCL unique id passed from rank 0 through the process group (process_group.hpp).
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

// This process as rank group.rank() of group.size(), on its host's GPU local_rank: rank 0 makes the
// NCCL unique id and the group passes it on, then ncclCommInitRank; runs body(communicator). A rank
// that fails aborts its communicator and rethrows; its peers are the launcher's to stop. Throws
// std::invalid_argument when the host has no GPU local_rank.
void run_nccl_process_rank(ProcessGroup& group, int local_rank, const std::function<void(Communicator&)>& body);

}  // namespace hydragen::decode
