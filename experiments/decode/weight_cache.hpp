#pragma once
// hydragen-decode's points share a shard's uploaded weights: the cache holds the last shard's and
// hands them out again while the points run that shard (model, layers, tp, rank, and the weight
// source by its describe()), releasing them before another shard's are made, so that the runtime's
// memory holds one shard's weights at a time. One cache per runtime, not shared between threads
// (each rank's thread has its own runtime and its own cache).
#include <cstddef>
#include <memory>

#include "decode/shard_weights.hpp"

namespace hydragen::decode {

class WeightCache {
 public:
  explicit WeightCache(const Runtime& runtime) : runtime_(runtime) {}  // the runtime outlives the cache

  // Rank `rank` of `shard` from `source`: the held weights when they are those, else built now, the
  // held ones released first.
  std::shared_ptr<const ShardWeights> get(const ModelShard& shard, const WeightSource& source, int rank);
  bool holds(const ModelShard& shard, const WeightSource& source, int rank) const;  // get() would reuse them
  // Bytes of the held weights (0 for none): allocated now, and free to the next point whether get()
  // reuses them or releases them.
  std::size_t held_bytes() const { return held_ != nullptr ? held_->bytes() : 0; }
  int builds() const { return builds_; }  // how many times get() built weights

 private:
  const Runtime& runtime_;
  std::shared_ptr<const ShardWeights> held_;
  int builds_ = 0;
};

}  // namespace hydragen::decode
