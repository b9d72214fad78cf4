#pragma once
// Where a K or V tile's 16-byte chunks go in shared memory (tile_offset), and which of them each
// thread of a worker copies (TileCopies). Host and device code: the kernels' load step uses both, and
// the host tests check that the copies cover a tile once (tests/planner/test_tile_copies.cpp).
#include "hydragen/host_device.hpp"

namespace hydragen::cuda {

// Element offset of (row, column) in a tile (MmaTile says which layout a block uses).
// Swizzled: 16-byte chunk c of row r is stored at chunk c ^ (r % 8). The eight rows an ldmatrix
// phase reads hit eight distinct bank groups, and the eight chunks of a 128-byte line of K or V
// land in one 128-byte line of shared memory (the tiles are 128-byte aligned): cp.async fetches
// the line from L2 once. Padded (D + 8): conflict-free too, with affine addresses, but a line
// written across two shared lines is fetched twice (kernel-notes: swizzled-tiles).
template <typename Tile>
HYDRAGEN_HD int tile_offset(int row, int column) {
  if constexpr (Tile::kSwizzled) return row * Tile::kRowElements + (((column >> 3) ^ (row & 7)) << 3) + (column & 7);
  return row * Tile::kRowElements + column;
}

// The copies of a tile by the THREADS threads of a worker. Thread (q, s, group), q fastest, copies
// chunks q + kColumnLanes k (k < kColumns) of rows s + 8 (group + kRowGroups j) (j < kRows). A thread's
// rows are 8 apart, so the swizzle of its chunks is the same in each row: its destinations are at most
// two bases plus constant offsets, where rows 2 apart changed the swizzle at every copy
// (kernel-notes: copy-addresses). A warp's pass reads kColumnLanes adjacent chunks of 8 rows: whole
// 32-byte sectors.
template <int THREADS, typename Tile>
struct TileCopies {
  static constexpr int kColumnLanes = Tile::kChunks < THREADS / 8 ? Tile::kChunks : THREADS / 8;
  static constexpr int kRowGroups = THREADS / 8 / kColumnLanes;
  static constexpr int kColumns = Tile::kChunks / kColumnLanes;    // chunks a thread copies of a row
  static constexpr int kRows = Tile::kTokens / (8 * kRowGroups);  // rows a thread copies
  static_assert(kColumnLanes >= 2 && (kColumnLanes & (kColumnLanes - 1)) == 0, "two or more lanes a row, a power of two");
  static_assert(THREADS % (8 * kColumnLanes) == 0 && Tile::kChunks % kColumnLanes == 0, "lanes cover whole rows");
  static_assert(Tile::kTokens % (8 * kRowGroups) == 0, "a tile is whole passes of the worker");
  // Chunks of a row whose swizzle differs (kColumnLanes < 8: a lane's k-th chunk and its
  // (k + kBases)-th are swizzled alike, so kBases bases serve all kColumns).
  static constexpr int kBases = kColumnLanes < 8 ? 8 / kColumnLanes : 1;

  int q, s, group;

  HYDRAGEN_HD explicit TileCopies(int thread)
      : q(thread % kColumnLanes), s(thread / kColumnLanes % 8), group(thread / (8 * kColumnLanes)) {}

  HYDRAGEN_HD int row(int j) const { return s + 8 * (group + kRowGroups * j); }
  HYDRAGEN_HD int chunk(int k) const { return q + kColumnLanes * k; }  // of the row, in K/V's layout

  // tile_offset(row(j), 8 chunk(k)), spelled so that j and k only add constants to one of kBases
  // bases: row(j) % 8 is s, and (q + L k) ^ s = (q ^ s % L) + L ((k % B ^ s / L) + B (k / B)) for L
  // lanes a row and B bases (L B = 8 when L < 8).
  HYDRAGEN_HD int destination(int j, int k) const {
    const int first_row = (s + 8 * group) * Tile::kRowElements;
    const int row_step = 8 * kRowGroups * Tile::kRowElements * j;
    if constexpr (!Tile::kSwizzled) return first_row + row_step + 8 * chunk(k);
    const int base = ((q ^ (s % kColumnLanes)) + kColumnLanes * ((k % kBases) ^ (s / kColumnLanes))) * 8;
    return first_row + row_step + base + 8 * kColumnLanes * kBases * (k / kBases);
  }
};

}  // namespace hydragen::cuda
