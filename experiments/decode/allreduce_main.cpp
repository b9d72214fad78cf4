// hydragen-allreduce: the all-reduce's bus bandwidth at each message size on these ranks, nccl-tests'
// all_reduce_perf loop of our own (issue 42): the reference for the decoder's measured all-reduces
// (hydragen-decode's allreduce_busbw_gbps) on the same machine. Each size is one sum of the runtime's
// dtype (the decoder's residual stream: bf16 on GPUs, fp32 on host ranks) timed as the decoder's are
// (collective_timing.hpp: captured in a graph, replayed back to back, the median of runs), --iters of
// them in one graph as all_reduce_perf enqueues its iterations back to back: one collective a graph
// would time the graph's launch (about 30 us on 4 GPUs) instead of the collective at small sizes.
//
//   hydragen-allreduce --gpus 4 --csv out/allreduce.csv                       (sizes 8 B .. 1 GB)
//   torchrun --no-python --nproc-per-node 4 hydragen-allreduce --rank-env     (a process per GPU)
//
// Bad usage: exit 2 and one line naming the flag, before anything runs.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "decode/collective_timing.hpp"
#include "decode/launch.hpp"
#include "flags/flag_checks.hpp"

#include "commit.hpp"  // HYDRAGEN_COMMIT, stamped at build time

namespace {

using namespace hydragen;
using namespace hydragen::decode;

struct Flags {
  std::string min_bytes = "8", max_bytes = "1G", csv, device = "auto";
  int gpus = 2, factor = 2, iters = 20, replays = 5, runs = 5;
  bool rank_env = false;
};

using flags::fail;

int run(const Flags& f) {
  const std::int64_t min_bytes = flags::parse_bytes("--min-bytes", f.min_bytes);
  const std::int64_t max_bytes = flags::parse_bytes("--max-bytes", f.max_bytes);
  if (min_bytes > max_bytes) fail("--min-bytes", f.min_bytes + " is above --max-bytes " + f.max_bytes);
  std::ofstream csv;
  const bool writer = !f.rank_env || launched_rank().rank == 0;
  if (writer && !f.csv.empty()) {
    csv.open(f.csv);
    if (!csv) fail("--csv", "cannot write '" + f.csv + "'");
  }
  on_ranks(RankLaunch{f.gpus, f.rank_env, f.device}, [&](Communicator& comm) {
    const std::unique_ptr<Runtime> runtime = make_runtime(f.device);
    const DType dtype = runtime->dtype();
    const int element = static_cast<int>(dtype_size(dtype));
    const std::vector<std::int64_t> sizes = message_sizes(min_bytes, max_bytes, f.factor, element);
    const bool speaks = comm.rank() == 0 && writer;
    if (speaks) {
      std::cerr << "hydragen-allreduce: " << sizes.size() << " sizes on " << comm.size() << " ranks, " << runtime->name() << " each\n";
      std::printf("%12s %12s %6s %12s %12s %12s\n", "bytes", "count", "type", "time us", "algbw GB/s", "busbw GB/s");
      if (csv.is_open()) csv << "device,commit,gpus,dtype,bytes,count,time_us,algbw_gbps,busbw_gbps,iters,replays,runs\n" << std::flush;
    }
    double peak = 0;
    std::int64_t peak_bytes = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::int64_t count = sizes[i] / element;
      const std::vector<Collective> sequence(static_cast<std::size_t>(f.iters), Collective{Collective::Op::sum, dtype, count});
      const CollectiveTiming t = time_collectives(*runtime, comm, sequence, f.replays, f.runs);
      if (!speaks) continue;
      const double us = t.ms * 1e3 / f.iters;  // one collective
      const double algbw = t.bytes / (t.ms / 1e3) / 1e9;
      if (t.busbw_gbps > peak) {
        peak = t.busbw_gbps;
        peak_bytes = sizes[i];
      }
      std::printf("%12lld %12lld %6s %12.2f %12.2f %12.2f\n", static_cast<long long>(sizes[i]), static_cast<long long>(count),
                  std::string(dtype_name(dtype)).c_str(), us, algbw, t.busbw_gbps);
      std::fflush(stdout);
      if (csv.is_open()) {
        csv << '"' << runtime->name() << "\"," << HYDRAGEN_COMMIT << ',' << comm.size() << ',' << dtype_name(dtype) << ',' << sizes[i] << ','
            << count << ',' << us << ',' << algbw << ',' << t.busbw_gbps << ',' << f.iters << ',' << f.replays << ',' << f.runs << '\n'
            << std::flush;
      }
      std::cerr << "[" << i + 1 << "/" << sizes.size() << "] " << sizes[i] << " bytes\n";
    }
    if (speaks) std::printf("peak bus bandwidth: %.2f GB/s at %lld bytes\n", peak, static_cast<long long>(peak_bytes));
  });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hydragen-allreduce: the all-reduce's time and bus bandwidth by message size on these ranks "
               "(nccl-tests' all_reduce_perf loop; the reference for hydragen-decode's measured all-reduces)"};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  Flags f;
  app.add_option("--gpus", f.gpus, "ranks as threads of this process, one per GPU (or per thread with --device host)")
      ->check(flags::decimal<int>());
  app.add_flag("--rank-env", f.rank_env,
               "this process is one rank of several: RANK of WORLD_SIZE on GPU LOCAL_RANK, meeting rank 0 at "
               "MASTER_ADDR:MASTER_PORT, as torchrun sets them; rank 0 alone prints and writes the CSV");
  app.add_option("--min-bytes", f.min_bytes, "smallest message, bytes (K, M, G: powers of 1024)");
  app.add_option("--max-bytes", f.max_bytes, "largest message, bytes");
  app.add_option("--factor", f.factor, "each size times this")->check(flags::decimal<int>())->check(CLI::Range(2, 1024));
  app.add_option("--iters", f.iters, "collectives of one size captured in one graph (all_reduce_perf -n)")
      ->check(flags::decimal<int>())
      ->check(CLI::PositiveNumber);
  app.add_option("--replays", f.replays, "graph replays per timed run")->check(flags::decimal<int>())->check(CLI::PositiveNumber);
  app.add_option("--runs", f.runs, "timed runs per size (the median)")->check(flags::decimal<int>())->check(CLI::PositiveNumber);
  app.add_option("--csv", f.csv, "write one row per size here");
  app.add_option("--device", f.device, "auto (GPUs when present) | host | cuda")->check(CLI::IsMember({"auto", "host", "cuda"}));
  try {
    app.parse(argc, argv);
    flags::reject_repeats(app);
    f.gpus = launched_ranks(RankLaunch{f.gpus, f.rank_env, f.device}, app.count("--gpus") > 0);
    if (f.gpus < 2) fail("--gpus", "an all-reduce needs at least 2 ranks, got " + std::to_string(f.gpus));
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "hydragen-allreduce: " << e.what() << "\n";
    return 2;
  }
  try {
    return run(f);
  } catch (const std::invalid_argument& e) {
    std::cerr << "hydragen-allreduce: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "hydragen-allreduce: " << e.what() << "\n";
    return 1;
  }
}
