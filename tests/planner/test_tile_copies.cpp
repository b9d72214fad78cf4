// The mma.sync kernels' load step (load_kv_tile) copies each K or V tile with TileCopies: thread
// (q, s, group) copies kColumns chunks of kRows rows, and writes each at TileCopies::destination,
// the form of tile_offset the kernel computes from a few bases. Checked on the host for every worker
// shape a kernel instantiates: the copies cover the tile once, each lands where tile_offset puts it,
// and a warp's pass reads whole 32-byte sectors of K and V.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>

#include "tile_config.hpp"
#include "tile_copies.hpp"

namespace hydragen::cuda {
namespace {

template <int THREADS_, typename Tile_>
struct Worker {
  static constexpr int THREADS = THREADS_;
  using Tile = Tile_;
  using Copies = TileCopies<THREADS, Tile>;
};

// The blocks of MmaBlockTile<D, ROW_WARPS, GROUPS> and their workers' threads: token_warps (a
// four-warp worker, swizzled), mma64 (four warps, padded), item_warps and sm_item_warps (one warp).
using WorkerShapes =
    ::testing::Types<Worker<kMmaThreads, MmaBlockTile<64, 1, 1>>, Worker<kMmaThreads, MmaBlockTile<128, 1, 1>>,
                     Worker<kMmaThreads, MmaBlockTile<64, 4, 1>>, Worker<kMmaThreads, MmaBlockTile<128, 4, 1>>,
                     Worker<32, MmaBlockTile<64, 1, kItemWarps>>, Worker<32, MmaBlockTile<128, 1, kItemWarps>>,
                     Worker<32, MmaBlockTile<64, 1, kSmWarps>>, Worker<32, MmaBlockTile<128, 1, kSmWarps>>>;

template <typename W>
class TileCopiesOf : public ::testing::Test {};
TYPED_TEST_SUITE(TileCopiesOf, WorkerShapes);

TYPED_TEST(TileCopiesOf, CopyEveryChunkOfATileOnce) {
  using W = TypeParam;
  using Copies = typename W::Copies;
  std::map<std::pair<int, int>, int> copied;  // (row, chunk) -> times
  for (int thread = 0; thread < W::THREADS; ++thread) {
    const Copies copies(thread);
    for (int j = 0; j < Copies::kRows; ++j) {
      for (int k = 0; k < Copies::kColumns; ++k) ++copied[{copies.row(j), copies.chunk(k)}];
    }
  }
  EXPECT_EQ(copied.size(), static_cast<size_t>(W::Tile::kTokens * W::Tile::kChunks));
  for (const auto& [at, times] : copied) {
    EXPECT_GE(at.first, 0);
    EXPECT_LT(at.first, W::Tile::kTokens);
    EXPECT_GE(at.second, 0);
    EXPECT_LT(at.second, W::Tile::kChunks);
    EXPECT_EQ(times, 1) << "row " << at.first << ", chunk " << at.second;
  }
}

TYPED_TEST(TileCopiesOf, LandEachChunkWhereTileOffsetPutsIt) {
  using W = TypeParam;
  using Copies = typename W::Copies;
  for (int thread = 0; thread < W::THREADS; ++thread) {
    const Copies copies(thread);
    for (int j = 0; j < Copies::kRows; ++j) {
      for (int k = 0; k < Copies::kColumns; ++k) {
        EXPECT_EQ(copies.destination(j, k), (tile_offset<typename W::Tile>(copies.row(j), 8 * copies.chunk(k))))
            << "thread " << thread << ", row " << copies.row(j) << ", chunk " << copies.chunk(k);
      }
    }
  }
}

// One copy instruction of a warp (a pass: the same j and k in every lane) reads 32 chunks of K; each
// 32-byte sector it touches (chunks 2c and 2c + 1 of a row) it reads whole.
TYPED_TEST(TileCopiesOf, ReadWholeSectorsInAWarpsPass) {
  using W = TypeParam;
  using Copies = typename W::Copies;
  for (int warp = 0; warp < W::THREADS / 32; ++warp) {
    for (int j = 0; j < Copies::kRows; ++j) {
      for (int k = 0; k < Copies::kColumns; ++k) {
        std::set<std::pair<int, int>> chunks;  // (row, chunk)
        for (int lane = 0; lane < 32; ++lane) {
          const Copies copies(32 * warp + lane);
          chunks.insert({copies.row(j), copies.chunk(k)});
        }
        for (const auto& [row, chunk] : chunks) {
          EXPECT_TRUE(chunks.count({row, chunk ^ 1})) << "warp " << warp << " reads half the sector of row " << row << ", chunk " << chunk;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hydragen::cuda
