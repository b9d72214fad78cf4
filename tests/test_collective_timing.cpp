// The all-reduces measured (issue 42): a step's collectives recorded as the decoder issues them, and
// replayed alone on host ranks; the bus bandwidth formula.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "decode/collective_timing.hpp"
#include "decode/communicator.hpp"
#include "decode/decoder.hpp"
#include "decode/host_runtime.hpp"

namespace hydragen::decode {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// A decode step of a TP-2 shard issues two sums of [B, H] per layer (the O and down projections),
// then one max over B argmax keys.
TEST(RecordingCommunicator, RecordsADecodeStepsCollectivesInOrder) {
  const ModelConfig model = model_config("smoke");
  std::vector<Collective> step;
  std::mutex done;
  run_host_ranks(2, [&](Communicator& comm) {
    const std::unique_ptr<Runtime> runtime = host_runtime();
    RecordingCommunicator recording(comm);
    DecoderOptions o;
    o.batch = 3;
    o.prompt_len = 5;
    o.suffix_capacity = 4;
    o.rank = comm.rank();
    o.comm = &recording;
    Decoder d(*runtime, shard(model, 2), *random_weights(1), o);
    d.prefill({1, 2, 3, 4, 5});
    recording.take();
    d.step({7, 8, 9}, 1);
    if (comm.rank() == 0) {
      const std::lock_guard<std::mutex> lock(done);
      step = recording.take();
    }
  });
  ASSERT_EQ(step.size(), static_cast<std::size_t>(2 * model.layers + 1));
  for (int i = 0; i < 2 * model.layers; ++i) {
    EXPECT_EQ(step[i].op, Collective::Op::sum);
    EXPECT_EQ(step[i].count, 3 * model.hidden);
    EXPECT_EQ(step[i].bytes(), 3 * model.hidden * 4);  // fp32 on the host
  }
  EXPECT_EQ(step.back().op, Collective::Op::max);
  EXPECT_EQ(step.back().bytes(), 3 * 8);
}

TEST(TimeCollectives, TimesTheSequenceOnEveryRankAndCountsItsBytes) {
  const std::vector<Collective> sequence = {{Collective::Op::sum, DType::fp32, 1000}, {Collective::Op::max, DType::fp32, 10}};
  std::vector<CollectiveTiming> timings(3);
  run_host_ranks(3, [&](Communicator& comm) {
    const std::unique_ptr<Runtime> runtime = host_runtime();
    timings[static_cast<std::size_t>(comm.rank())] = time_collectives(*runtime, comm, sequence, 4, 3);
  });
  for (const CollectiveTiming& t : timings) {
    EXPECT_EQ(t.bytes, 4000 + 80);
    EXPECT_GT(t.ms, 0);
    EXPECT_DOUBLE_EQ(t.busbw_gbps, bus_bandwidth_gbps(t.bytes, 3, t.ms / 1e3));
  }
}

TEST(TimeCollectives, RefusesAnEmptySequenceAndNoReplays) {
  run_host_ranks(1, [](Communicator& comm) {
    const std::unique_ptr<Runtime> runtime = host_runtime();
    EXPECT_THAT([&] { time_collectives(*runtime, comm, {}); }, ThrowsMessage<std::invalid_argument>(HasSubstr("empty sequence")));
    EXPECT_THAT([&] { time_collectives(*runtime, comm, {{Collective::Op::sum, DType::fp32, 4}}, 0); },
                ThrowsMessage<std::invalid_argument>(HasSubstr("at least 1, got 0 and 3")));
  });
}

// nccl-tests' formula: a ring all-reduce moves 2 (n - 1) / n of the bytes over each link.
TEST(BusBandwidth, IsNcclTestsFormula) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_gbps(1e9, 2, 1), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_gbps(1e9, 4, 0.5), 3.0);
  EXPECT_EQ(bus_bandwidth_gbps(1e9, 1, 1), 0);
}

// all_reduce_perf -b 8 -e 64 -f 2, and the sizes a bf16 sum can take: whole values, never fewer than one.
TEST(MessageSizes, DoubleFromMinToMaxInWholeValues) {
  EXPECT_EQ(message_sizes(8, 64, 2, 4), (std::vector<std::int64_t>{8, 16, 32, 64}));
  EXPECT_EQ(message_sizes(8, 100, 4, 4), (std::vector<std::int64_t>{8, 32}));
  EXPECT_EQ(message_sizes(1, 8, 2, 2), (std::vector<std::int64_t>{2, 4, 8}));  // 1 byte is one bf16 value, 2 bytes
  EXPECT_EQ(message_sizes(6, 6, 2, 4), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(message_sizes(std::int64_t{1} << 30, std::int64_t{1} << 30, 2, 2), (std::vector<std::int64_t>{std::int64_t{1} << 30}));
}

TEST(MessageSizes, RefusesAnEmptyRangeAndFactorsBelowTwo) {
  EXPECT_THAT([] { message_sizes(64, 8, 2, 4); }, ThrowsMessage<std::invalid_argument>(HasSubstr("min 64, max 8")));
  EXPECT_THAT([] { message_sizes(0, 8, 2, 4); }, ThrowsMessage<std::invalid_argument>(HasSubstr("1 <= min <= max")));
  EXPECT_THAT([] { message_sizes(8, 64, 1, 4); }, ThrowsMessage<std::invalid_argument>(HasSubstr("factor 1")));
}

}  // namespace
}  // namespace hydragen::decode
