#pragma once
// What the host hands the kernels: plain structs shared by host and device code, one params struct
// per kernel family, passed by value. Each field's shape is written here once; plans fill them by
// name.
#include "tile_config.hpp"

namespace hydragen::cuda {

// One block of segment attention: up to 16 (narrow), 64 (wide) or 128 (wgmma) query rows attend the
// tokens [token_begin, token_end) of a list of segments laid end to end (the item's token list).
struct WorkItem {
  int kv_head = 0;
  int first_row = 0;      // into the row tables and the partial outputs
  int num_rows = 0;
  int first_segment = 0;  // into item_segments
  int num_segments = 0;
  int token_begin = 0;    // positions in the item's token list
  int token_end = 0;
};

// Bytes of one TMA descriptor (CUtensorMap): 128, 64-byte aligned.
inline constexpr int kTensorMapBytes = 128;

// Where a query's partial rows go and how they become its O and LSE (merge.cuh, row_output.cuh).
struct MergeParams {
  float* partial_o = nullptr;    // [rows, D] fp32, normalized
  float* partial_lse = nullptr;  // [rows] natural log; -inf for a row that saw no token
  const int* offsets = nullptr;  // [num_queries + 1] into rows
  const int* rows = nullptr;     // partial rows of each query, ascending
  void* o = nullptr;             // [B, q_len, Hq, D] storage dtype
  float* lse = nullptr;          // [B, q_len, Hq]
  int num_queries = 0;           // B * q_len * Hq
  // Whether the block computing a query's only partial row writes it to O and LSE itself (then the
  // merge skips that query). False when some rows come from a producer that can only write the
  // workspace (the cuBLAS products): the merge then folds every query.
  bool single_rows_direct = true;
  // Whether the rows of this launch (narrow items, cuda-hydragen's leaves) do their queries' merge:
  // each folds its query's other partial rows, written by the wide launch it follows as a
  // programmatic dependent, and writes O and LSE, so that no merge kernel runs (the schedule's
  // narrow_rows_fold says when it can, the plan whether it pays).
  bool fold_wide_rows = false;
  // The most rows a folding row folds: kFoldRounds, or kLongFoldRounds in token_warps' long-fold kernel.
  // Read by the host, which launches the kernel compiled for it.
  int fold_rounds = kFoldRounds;
  // LaunchRecipe::chained_leaves (narrow items as the wide launch's programmatic dependent, no fold):
  // [1] the workers that have finished, zero between runs; the last to finish waits for the wide
  // launch, so that this launch ends after it and the merge after both reads its rows. Null otherwise.
  unsigned* chain_count = nullptr;
};

// Segment attention (cuda-flash, cuda-hydragen): every item attends its rows to a token range and
// hands each row, one partial result of its query, to row_output.cuh.
struct SegmentAttentionParams {
  const void* q = nullptr;               // [B, q_len, Hq, D] storage dtype
  const void* const* k = nullptr;        // [num_segments] -> [length, Hkv, D]
  const void* const* v = nullptr;        // [num_segments] -> [length, Hkv, D]
  const int* segment_length = nullptr;   // [num_segments]
  const WorkItem* items = nullptr;       // [num_items]
  int num_items = 0;
  const int* worker_items = nullptr;     // [workers + 1] each worker's run of items (Schedule::wide_worker_items);
                                         // null: an even share by count (worker_items.cuh)
  const WorkItem* leaf_items = nullptr;  // [num_leaf_items] narrow items the wgmma blocks' leaf warps take, an even
  int num_leaf_items = 0;                // share each (LaunchRecipe::leaves_inside); none otherwise
  const int* cluster_leaf_items = nullptr;  // [clusters + 1] with leaf_items in a cluster launch that folds them
                                            // (Schedule::cluster_leaf_items): cluster c's leaf warps take leaf_items
                                            // [cluster_leaf_items[c], cluster_leaf_items[c + 1]); null: an even share
  const int* item_segments = nullptr;    // segment ids; WorkItem::first_segment indexes here
  const int* row_query = nullptr;        // [rows] the query row (indexing.hpp) of each partial row
  const int* row_limit = nullptr;        // [rows] positions of its item's token list the row may see (causal leaf)
  const int* row_leaf = nullptr;         // [rows] the sequence whose leaf ends the row's token list, or -1
  const int* leaf_lengths = nullptr;     // [B] tokens in each leaf this run (AttentionInputs); null: as planned
  const int* leaf_capacity = nullptr;    // [B] each sequence's leaf length in the plan's tree
  MergeParams merge;
  const void* kv_maps = nullptr;         // [num_segments][2] TMA descriptors (K, V) of the segments wgmma items
                                         // read (one segment per item); null for the other kernels
  int kv_heads = 0;
  float scale_log2 = 0;                  // score scale * log2(e): the kernels exponentiate with exp2
  bool leaf_evict_first = false;         // the narrow items' K/V copies ask L2 to evict their lines first: no other
                                         // item reads them (rule leaf_evict_first)
};

// The naive kernel: one block per query row, scores materialized in `scores`.
struct NaiveParams {
  const void* q = nullptr;              // [B, q_len, Hq, D]
  const void* const* k = nullptr;       // [num_segments] -> [length, Hkv, D]
  const void* const* v = nullptr;       // [num_segments] -> [length, Hkv, D]
  const int* segment_length = nullptr;  // [num_segments]
  const int* path_offsets = nullptr;    // [B + 1] into path_segments
  const int* path_segments = nullptr;   // root-to-leaf segments of each sequence
  const int* leaf_lengths = nullptr;    // [B] tokens in each leaf this run (AttentionInputs); null: as planned
  float* scores = nullptr;              // [B * q_len * Hq, max_path] workspace
  void* o = nullptr;                    // [B, q_len, Hq, D]
  float* lse = nullptr;                 // [B, q_len, Hq]
  int q_len = 0, q_heads = 0, kv_heads = 0;
  long long max_path = 0;               // row stride of scores
  float scale = 0;
};

// cuda-hydragen-cublas: gathers the queries of its shared segments into [Hkv][rows][D] matrices.
struct GatherParams {
  const void* q = nullptr;         // [B, q_len, Hq, D] storage dtype
  void* gathered = nullptr;        // [num_rows, D] storage dtype
  const int* row_query = nullptr;  // [num_rows] the query row each gathered row copies
  int num_rows = 0;
};

// cuda-hydragen-cublas: the softmax of one chunk's scores, per KV head and stacked row: P (storage
// dtype, normalized over the chunk) for the P V product and each row's LSE as a partial row.
struct ChunkSoftmaxParams {
  const float* scores = nullptr;   // [Hkv][rows][row_stride] raw Q K^T of the chunk (tokens columns used)
  void* probabilities = nullptr;   // [Hkv][rows][row_stride] storage dtype
  float* partial_lse = nullptr;    // [partial rows]: row (h, r) at first_row + h * rows + r
  const int* row_limit = nullptr;  // [partial rows] positions of the segment each row may see
  int rows = 0;                    // stacked query rows per KV head
  int kv_heads = 0;
  int tokens = 0;                  // the chunk's tokens
  int row_stride = 0;              // elements between rows of scores and probabilities (>= tokens)
  int token_begin = 0;             // the chunk's first position in its segment
  int first_row = 0;               // partial row of KV head 0's first stacked row (GemmChunk)
  float scale_log2 = 0;            // score scale * log2(e)
};

}  // namespace hydragen::cuda
