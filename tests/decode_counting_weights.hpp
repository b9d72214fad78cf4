#pragma once
// The decode tests' weight source that counts its loads (test_decoder, test_decode_measure): a shard's
// weights are made once, however many decoders and points run on them. Seeded random weights.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "decode/weights.hpp"

namespace hydragen::decode {

class CountingWeights : public WeightSource {
 public:
  explicit CountingWeights(std::uint64_t seed) : random_(random_weights(seed)) {}
  std::string describe() const override { return random_->describe(); }
  DType dtype() const override { return random_->dtype(); }
  std::vector<float> load(const TensorSpec& spec, const ModelShard& shard, int rank) const override {
    ++loads_;
    return random_->load(spec, shard, rank);
  }
  int loads() const { return loads_; }

 private:
  std::unique_ptr<WeightSource> random_;
  mutable std::atomic<int> loads_{0};  // host ranks' threads load at once
};

}  // namespace hydragen::decode
