#include "decode/nccl_ranks.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

#include "decode/rank_group.hpp"
#include "hydragen/cuda/check.hpp"

namespace hydragen::decode {
namespace {

void nccl_check(ncclResult_t result, const char* call, ncclComm_t comm = nullptr) {
  if (result == ncclSuccess || result == ncclInProgress) return;
  std::string what = std::string("NCCL: ") + call + ": " + ncclGetErrorString(result);
  if (const char* last = ncclGetLastError(comm); last != nullptr && *last != '\0') what += " (" + std::string(last) + ")";
  throw std::runtime_error(what);
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::fp32: return ncclFloat32;
    case DType::fp16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::fp64: return ncclFloat64;
  }
  throw std::invalid_argument("NCCL ranks: no NCCL type for " + std::string(dtype_name(dtype)));
}

cudaStream_t stream_of(const Runtime& runtime) {
  if (runtime.memory().name() != "cuda") throw std::invalid_argument("NCCL ranks take CUDA runtimes, got " + runtime.name());
  return static_cast<cudaStream_t>(runtime.stream().handle);
}

// The ranks' agreement on the host: Communicator::all, and whether a rank has failed already.
struct HostSide {
  std::function<bool(bool)> all;
  std::function<bool()> failed;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(HostSide host, ncclComm_t comm, int rank, int size) : host_(std::move(host)), comm_(comm), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce_sum(Runtime& runtime, const Matrix& x) override {
    if (x.ld != x.cols) throw std::invalid_argument("NCCL ranks: all_reduce_sum takes a contiguous x (ld == cols)");
    enter();
    nccl_check(ncclAllReduce(x.data, x.data, static_cast<std::size_t>(x.rows * x.cols), nccl_type(x.dtype), ncclSum, comm_,
                             stream_of(runtime)),
               "ncclAllReduce (sum)", comm_);
  }

  void all_reduce_max(Runtime& runtime, ArgmaxKey* keys, int count) override {
    enter();
    nccl_check(ncclAllReduce(keys, keys, static_cast<std::size_t>(count), ncclUint64, ncclMax, comm_, stream_of(runtime)),
               "ncclAllReduce (max)", comm_);
  }

  bool all(bool ok) override { return host_.all(ok); }

 private:
  // No new collective once a rank has failed: its peers would wait for it on the GPU.
  void enter() {
    if (host_.failed()) throw std::runtime_error("tensor parallel: another rank failed");
  }

  HostSide host_;
  ncclComm_t comm_;
  const int rank_, size_;
};

void require_gpus(int needed, const std::string& what) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    (void)cudaGetLastError();
    devices = 0;
  }
  if (needed > devices) throw std::invalid_argument(what + ": " + std::to_string(needed) + " GPUs asked, " + std::to_string(devices) + " here");
}

}  // namespace

void run_nccl_ranks(int gpus, const std::function<void(Communicator&)>& body) {
  if (gpus < 1) throw std::invalid_argument("tensor parallel over NCCL: at least one GPU, got " + std::to_string(gpus));
  require_gpus(gpus, "tensor parallel over NCCL");
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // before NCCL reads its environment; children inherit it
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(gpus), nullptr);
  nccl_check(ncclCommInitAll(comms.data(), gpus, nullptr), "ncclCommInitAll");
  RankGroup group(gpus);
  bool aborted = false;
  std::exception_ptr failure;
  try {
    run_rank_threads(
        group,
        [&](int rank) {
          CUDA_CHECK(cudaSetDevice(rank));
          NcclCommunicator communicator({[&group, rank](bool ok) { return group.all(rank, ok); }, [&group] { return group.failed(); }},
                                        comms[static_cast<std::size_t>(rank)], rank, gpus);
          body(communicator);
        },
        [&] {  // a rank waits on the GPU for a peer that failed: abort every communicator (NCCL's watchdog way)
          for (ncclComm_t c : comms) (void)ncclCommAbort(c);
          aborted = true;
        });
  } catch (...) {
    failure = std::current_exception();
  }
  if (!aborted) {
    for (ncclComm_t c : comms) (void)(failure ? ncclCommAbort(c) : ncclCommDestroy(c));
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace hydragen::decode

namespace hydragen::decode {

void run_nccl_process_rank(ProcessGroup& group, int local_rank, const std::function<void(Communicator&)>& body) {
  require_gpus(local_rank + 1, "rank " + std::to_string(group.rank()) + " on GPU LOCAL_RANK " + std::to_string(local_rank));
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  CUDA_CHECK(cudaSetDevice(local_rank));
  ncclUniqueId id{};
  if (group.rank() == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  const std::string from_rank0 = group.all_gather(std::string(id.internal, sizeof id.internal)).front();
  std::copy(from_rank0.begin(), from_rank0.end(), id.internal);
  ncclComm_t comm = nullptr;
  nccl_check(ncclCommInitRank(&comm, group.size(), id, group.rank()), "ncclCommInitRank");
  try {
    NcclCommunicator communicator({[&group](bool ok) { return group.all(ok); }, [] { return false; }}, comm, group.rank(), group.size());
    body(communicator);
  } catch (...) {
    (void)ncclCommAbort(comm);  // the peers' collectives fail or hang: the launcher stops them (torchrun does)
    throw;
  }
  (void)ncclCommDestroy(comm);
}

}  // namespace hydragen::decode
