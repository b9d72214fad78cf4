#pragma once
// Where a decode binary's ranks run (hydragen-decode, hydragen-allreduce): the runtime --device names,
// and one body per rank, as threads of this process (--gpus N) or as this process's one rank of several
// (--rank-env, the launcher's environment). NCCL between GPUs, host memory or TCP between host ranks.
// Bad usage throws std::invalid_argument("FLAG: why"), as the binaries report it.
#include <functional>
#include <memory>
#include <string>

#include "decode/communicator.hpp"
#include "decode/process_group.hpp"
#include "decode/runtime.hpp"

namespace hydragen::decode {

struct RankLaunch {
  int gpus = 1;                // ranks as threads of this process (ignored with rank_env)
  bool rank_env = false;       // this process is RANK of WORLD_SIZE (process_group.hpp)
  std::string device = "auto";  // auto (a GPU when present) | host | cuda
};

// Whether `device` gives a CUDA runtime (auto: when this build has CUDA and a GPU is present).
bool on_cuda(const std::string& device);
std::unique_ptr<Runtime> make_runtime(const std::string& device);

// This process's rank from its launcher's environment (--rank-env).
ProcessRank launched_rank();

// How many ranks run: with rank_env WORLD_SIZE, where a --gpus given (gpus_given) must equal it; else gpus.
int launched_ranks(const RankLaunch& launch, bool gpus_given);

// body(communicator) on each rank this process runs: with rank_env this process's one rank, else
// `gpus` threads; NCCL on GPUs, host ranks with device host. Throws std::invalid_argument when there
// are fewer GPUs than asked or this build has no NCCL for GPU ranks.
void on_ranks(const RankLaunch& launch, const std::function<void(Communicator&)>& body);

}  // namespace hydragen::decode
