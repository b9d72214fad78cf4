#include "decode/weight_cache.hpp"

namespace hydragen::decode {

std::shared_ptr<const ShardWeights> WeightCache::get(const ModelShard& shard, const WeightSource& source, int rank) {
  if (holds(shard, source, rank)) return held_;
  held_.reset();  // released before the next shard takes memory (no decoder holds them between points)
  held_ = std::make_shared<const ShardWeights>(runtime_, shard, source, rank);
  ++builds_;
  return held_;
}

bool WeightCache::holds(const ModelShard& shard, const WeightSource& source, int rank) const {
  return held_ != nullptr && held_->mismatch(runtime_, shard, rank).empty() && held_->source() == source.describe();
}

}  // namespace hydragen::decode
