#include "decode/launch.hpp"

#include <stdexcept>

#include "decode/host_runtime.hpp"
#include "flags/flag_checks.hpp"
#ifdef HYDRAGEN_WITH_CUDA
#include "decode/cuda_runtime.hpp"
#include "hydragen/cuda/device.hpp"
#ifdef HYDRAGEN_WITH_NCCL
#include "decode/nccl_ranks.hpp"
#endif
#endif

namespace hydragen::decode {

using flags::fail;

bool on_cuda(const std::string& device) {
#ifdef HYDRAGEN_WITH_CUDA
  if (device != "host" && cuda::device_count() > 0) return true;
#endif
  if (device == "cuda") fail("--device", "no CUDA device here (or this build has no CUDA)");
  return false;
}

std::unique_ptr<Runtime> make_runtime(const std::string& device) {
#ifdef HYDRAGEN_WITH_CUDA
  if (on_cuda(device)) return cuda_runtime();
#else
  on_cuda(device);  // refuses --device cuda
#endif
  return host_runtime();
}

ProcessRank launched_rank() {
  try {
    return process_rank_from_env();
  } catch (const std::invalid_argument& e) {
    fail("--rank-env", e.what());
  }
}

int launched_ranks(const RankLaunch& launch, bool gpus_given) {
  if (!launch.rank_env) return launch.gpus;
  const ProcessRank me = launched_rank();
  if (gpus_given && launch.gpus != me.size) fail("--gpus", std::to_string(launch.gpus) + " against WORLD_SIZE " + std::to_string(me.size));
  return me.size;
}

void on_ranks(const RankLaunch& launch, const std::function<void(Communicator&)>& body) {
  if (launch.rank_env) {
    const ProcessRank me = launched_rank();
    ProcessGroup group(me);
    if (!on_cuda(launch.device)) {
      run_host_process_rank(group, body);
      return;
    }
#ifdef HYDRAGEN_WITH_NCCL
    run_nccl_process_rank(group, me.local_rank, body);
    return;
#endif
  } else if (!on_cuda(launch.device)) {
    run_host_ranks(launch.gpus, body);
    return;
  }
#ifdef HYDRAGEN_WITH_NCCL
  if (cuda::device_count() < launch.gpus) {
    fail("--gpus", std::to_string(launch.gpus) + " GPUs asked, " + std::to_string(cuda::device_count()) + " here");
  }
  run_nccl_ranks(launch.gpus, body);
#else
  fail(launch.rank_env ? "--rank-env" : "--gpus", "this build has no NCCL: ranks run on --device host only");
#endif
}

}  // namespace hydragen::decode
