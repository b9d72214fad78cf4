#pragma once
// What the host hands the attention kernels: plain structs shared by host and device code, one
// params struct per kernel family, passed by value.
#include <cstdint>

namespace hydragen::cuda {

// One block of segment attention: up to 16 (narrow), 64 (wide) or 128 (wgmma) query rows attend the tokens
// [token_begin, token_end) of a list of segments laid end to end (the item's token list).
struct WorkItem {
  int kv_head;
  int first_row;      // into the row tables and the partial outputs
  int num_rows;
  int first_segment;  // into item_segments
  int num_segments;
  int token_begin;    // positions in the item's token list
  int token_end;
};

// Bytes of one TMA descriptor (CUtensorMap): 128, 64-byte aligned.
inline constexpr int kTensorMapBytes = 128;

// Where a query's partial rows go and how they become its O and LSE: the block of a query's only
// row writes them (row_output.cuh); the merge kernel folds a query's several rows (merge.cuh).
struct MergeParams {
  float* partial_o;    // [rows, D]
  float* partial_lse;  // [rows] natural log; -inf for a row that saw no token
  const int* offsets;  // [num_queries + 1] into rows
  const int* rows;     // partial rows of each query, ascending
  void* o;             // [B, q_len, Hq, D] storage dtype
  float* lse;          // [B, q_len, Hq]
  int num_queries;     // B * q_len * Hq
};

// Segment attention (the flash and hydragen backends): every item attends its rows to a token range
// and hands each row, one partial result of its query, to row_output.cuh.
struct SegmentAttentionParams {
  const void* q;                // [B, q_len, Hq, D] storage dtype
  const void* const* k;         // [num_segments] -> [length, Hkv, D]
  const void* const* v;         // [num_segments] -> [length, Hkv, D]
  const int* segment_length;    // [num_segments]
  const WorkItem* items;        // [num_items]
  int num_items;                // set by launch_segment_attention
  const int* item_segments;     // segment ids, WorkItem::first_segment indexes here
  const int* row_query;         // [rows] query row (b * q_len + qi) * Hq + h
  const int* row_limit;         // [rows] positions of its item's token list the row may see (causal leaf)
  MergeParams merge;
  const void* kv_maps;          // [num_segments][2] TMA descriptors (K, V) of the segments wgmma items
                                // read (one segment per item); null for the other kernels
  int kv_heads;
  float scale_log2;             // score scale * log2(e): the kernels exponentiate with exp2
};

// The naive kernel: one block per query row, scores materialized in `scores`.
struct NaiveParams {
  const void* q;               // [B, q_len, Hq, D]
  const void* const* k;        // [num_segments] -> [length, Hkv, D]
  const void* const* v;        // [num_segments] -> [length, Hkv, D]
  const int* segment_length;   // [num_segments]
  const int* path_offsets;     // [B + 1] into path_segments
  const int* path_segments;    // root-to-leaf segments of each sequence
  float* scores;               // [B * q_len * Hq, max_path] workspace
  void* o;                     // [B, q_len, Hq, D]
  float* lse;                  // [B, q_len, Hq]
  int q_len, q_heads, kv_heads;
  long long max_path;          // row stride of scores
  float scale;
};

}  // namespace hydragen::cuda
