#pragma once
// Ranks as processes (issue 42): one process per rank, started by a launcher (torchrun, mpirun with
// the variables exported, or a shell loop) that sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
// MASTER_PORT. The processes meet over TCP: rank 0 listens at MASTER_ADDR:MASTER_PORT, every other
// rank connects to it, and all_gather passes byte strings through rank 0 (a star). It carries what
// the ranks agree on the host (the NCCL unique id, Communicator::all) and, for host ranks as
// processes, the host all-reduces themselves; across hosts, MASTER_ADDR is rank 0's host's address.
#include <string>
#include <vector>

namespace hydragen::decode {

// This process's place among the ranks, from the launcher's environment.
struct ProcessRank {
  int rank = 0, size = 1;
  int local_rank = 0;                    // which GPU of this host: LOCAL_RANK, else RANK
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR, else loopback
  int master_port = 29500;                // MASTER_PORT, else torchrun's default
};

// Reads RANK and WORLD_SIZE (both required), LOCAL_RANK, MASTER_ADDR and MASTER_PORT. Throws
// std::invalid_argument naming the variable that is missing or not a number in range.
ProcessRank process_rank_from_env();

class ProcessGroup {
 public:
  // Rank 0 listens and accepts every other rank; the others connect, retrying until `timeout_s` has
  // passed (rank 0 may start last). Throws std::runtime_error naming the address and the reason.
  ProcessGroup(const ProcessRank& me, double timeout_s = 60);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return me_.rank; }
  int size() const { return me_.size; }
  // Every rank's `mine`, in rank order, on every rank (each rank calls it at the same point).
  // Throws std::runtime_error when a peer's connection closes (it failed or stopped).
  std::vector<std::string> all_gather(const std::string& mine);
  // Whether every rank passed ok = true.
  bool all(bool ok);

 private:
  ProcessRank me_;
  int listener_ = -1;
  std::vector<int> peers_;  // rank 0: the socket of rank r at [r] ([0] unused); others: [0], rank 0's
};

}  // namespace hydragen::decode
