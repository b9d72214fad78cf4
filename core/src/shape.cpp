#include "hydragen/shape.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace hydragen {

namespace {
void require_positive(const char* field, int value) {
  if (value <= 0) {
    throw std::invalid_argument(std::string("AttentionShape.") + field + " must be positive, got " +
                                std::to_string(value));
  }
}
}  // namespace

void AttentionShape::validate() const {
  require_positive("num_seqs", num_seqs);
  require_positive("q_len", q_len);
  require_positive("q_heads", q_heads);
  require_positive("kv_heads", kv_heads);
  require_positive("head_dim", head_dim);
  if (q_heads % kv_heads != 0) {
    throw std::invalid_argument("AttentionShape: q_heads (" + std::to_string(q_heads) +
                                ") must be a multiple of kv_heads (" + std::to_string(kv_heads) + ")");
  }
  if (!(scale > 0.0f) || !std::isfinite(scale)) {
    std::ostringstream s;
    s << "AttentionShape.scale must be positive and finite, got " << scale;
    throw std::invalid_argument(s.str());
  }
}

std::string AttentionShape::describe() const {
  std::ostringstream s;
  s << "B=" << num_seqs << " q_len=" << q_len << " Hq=" << q_heads << " Hkv=" << kv_heads << " D=" << head_dim
    << " " << dtype_name(dtype) << " scale=" << scale;
  return s.str();
}

float AttentionShape::default_scale(int head_dim) {
  return head_dim > 0 ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim))) : 0.0f;
}

AttentionShape make_shape(int num_seqs, int q_len, int q_heads, int kv_heads, int head_dim, DType dtype) {
  return AttentionShape{num_seqs, q_len, q_heads, kv_heads, head_dim, AttentionShape::default_scale(head_dim), dtype};
}

}  // namespace hydragen
