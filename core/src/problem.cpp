#include "hydragen/problem.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "parallel.hpp"

namespace hydragen {

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Element i of stream `stream`: N(0, 1) by Box-Muller from two counter-based uniforms, so every value
// depends only on (seed, stream, i) and the tensors can be filled in parallel, identically on any
// number of threads.
double normal_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  const std::uint64_t key = splitmix64(seed ^ splitmix64(stream));
  const double u1 = (static_cast<double>(splitmix64(key ^ (2 * i)) >> 11) + 0.5) * 0x1.0p-53;  // (0, 1)
  const double u2 = static_cast<double>(splitmix64(key ^ (2 * i + 1)) >> 11) * 0x1.0p-53;       // [0, 1)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Element i of a tensor as make_problem draws it: in fp32, like the data a model would hold, scaled
// and rounded through the dtype; never an exact zero (zeros hide indexing bugs).
double drawn_value(std::uint64_t seed, std::uint64_t stream, std::size_t i, std::size_t count, double factor, DType dtype) {
  float value = static_cast<float>(normal_at(seed, stream, i));
  for (std::uint64_t retry = 1; value == 0.0f; ++retry) value = static_cast<float>(normal_at(seed, stream, i + retry * count));
  return round_through(static_cast<double>(value) * factor, dtype);
}

std::vector<double> draw(std::uint64_t seed, std::uint64_t stream, std::size_t count, double factor, DType dtype) {
  std::vector<double> out(count);
  detail::parallel_chunks(count, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) out[i] = drawn_value(seed, stream, i, count, factor, dtype);
  });
  return out;
}

// The same values, encoded: 2 bytes an element for bf16 instead of 8.
std::vector<std::byte> draw_bytes(std::uint64_t seed, std::uint64_t stream, std::size_t count, double factor, DType dtype) {
  const std::size_t size = dtype_size(dtype);
  std::vector<std::byte> out(count * size);
  detail::parallel_chunks(count, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) encode_one(drawn_value(seed, stream, i, count, factor, dtype), dtype, out.data() + i * size);
  });
  return out;
}

// The streams of make_problem: Q is stream 0, segment s's K and V are 2s + 1 and 2s + 2.
std::uint64_t stream_of(int kind, int segment) {
  return kind == 0 ? 0 : 2 * static_cast<std::uint64_t>(segment) + static_cast<std::uint64_t>(kind);
}

std::size_t kv_row(const AttentionShape& shape) { return static_cast<std::size_t>(shape.kv_heads) * shape.head_dim; }
std::size_t query_rows(const AttentionShape& shape) {
  return static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads;
}

// Checked before anything is drawn, by both ways of making a problem.
void check_q_scale(double q_scale, const char* who) {
  if (!(q_scale > 0) || !std::isfinite(q_scale)) {
    throw std::invalid_argument(std::string(who) + ": q_scale must be positive and finite, got " + std::to_string(q_scale));
  }
}

const ProblemSpec& checked(const ProblemSpec& spec) {
  check_q_scale(spec.q_scale, "ProblemSpec");
  return spec;
}
}  // namespace

Problem make_problem(const AttentionShape& shape, const SharingTree& tree, std::uint64_t seed, double q_scale) {
  validate_problem(shape, tree);
  check_q_scale(q_scale, "make_problem");
  Problem p{shape, tree, {}, {}, {}};
  p.q = draw(seed, stream_of(0, 0), query_rows(shape) * shape.head_dim, q_scale, shape.dtype);
  for (int s = 0; s < tree.num_segments(); ++s) {
    const std::size_t n = static_cast<std::size_t>(tree.length(s)) * kv_row(shape);
    p.k.push_back(draw(seed, stream_of(1, s), n, 1.0, shape.dtype));
    p.v.push_back(draw(seed, stream_of(2, s), n, 1.0, shape.dtype));
  }
  return p;
}

Problem with_dtype(const Problem& problem, DType dtype) {
  Problem p = problem;
  p.shape.dtype = dtype;
  auto round_all = [dtype](std::vector<double>& xs) {
    for (double& x : xs) x = round_through(x, dtype);
  };
  round_all(p.q);
  for (auto& k : p.k) round_all(k);
  for (auto& v : p.v) round_all(v);
  return p;
}

double logit_bound(const Problem& problem) {
  const int d = problem.shape.head_dim;
  auto max_row_norm = [d](const std::vector<double>& xs) {
    double best = 0;
    for (std::size_t r = 0; r + d <= xs.size(); r += d) {
      double sq = 0;
      for (int i = 0; i < d; ++i) sq += xs[r + i] * xs[r + i];
      best = std::max(best, sq);
    }
    return std::sqrt(best);
  };
  double k_norm = 0;
  for (const auto& k : problem.k) k_norm = std::max(k_norm, max_row_norm(k));
  return problem.shape.scale * max_row_norm(problem.q) * k_norm;
}

std::string_view storage_name(Storage storage) { return storage == Storage::shared ? "shared" : "redundant"; }

Storage parse_storage(std::string_view text) {
  if (text == "shared") return Storage::shared;
  if (text == "redundant") return Storage::redundant;
  throw std::invalid_argument("storage: '" + std::string(text) + "' is not one of shared, redundant");
}

std::string BackendChoice::label() const { return options.empty() ? backend : backend + ":" + options.text(); }

BackendChoice parse_backend_choice(std::string_view spec) {
  std::vector<std::string> fields;
  for (std::size_t begin = 0;;) {
    const std::size_t end = std::min(spec.find(':', begin), spec.size());
    fields.emplace_back(spec.substr(begin, end - begin));
    if (end == spec.size()) break;
    begin = end + 1;
  }
  if (fields[0].empty()) throw std::invalid_argument("backend spec '" + std::string(spec) + "' has no backend name");
  BackendChoice choice;
  choice.backend = fields[0];
  for (std::size_t i = 1; i < fields.size(); ++i) {
    const std::string& field = fields[i];
    if (field.find('=') != std::string::npos) {
      const PlanOptions one = PlanOptions::parse(field);
      choice.options.set(one.items()[0].first, one.items()[0].second);
    } else if (field == "shared" || field == "redundant") {
      if (choice.storage_named) throw std::invalid_argument("backend spec '" + std::string(spec) + "' names the storage twice");
      choice.storage = parse_storage(field);
      choice.storage_named = true;
    } else {
      throw std::invalid_argument("backend spec '" + std::string(spec) + "': '" + field +
                                  "' is neither a storage (shared, redundant) nor an option (name=value)");
    }
  }
  return choice;
}

StagedProblem::StagedProblem(const DeviceMemory& memory, const Problem& problem, Storage storage)
    : StagedProblem(memory, problem.shape, problem.tree, storage, [&](Kind kind, int segment) {
        const std::vector<double>& values =
            kind == Kind::q ? problem.q : kind == Kind::k ? problem.k.at(segment) : problem.v.at(segment);
        return encode(values, problem.shape.dtype);
      }) {}

StagedProblem::StagedProblem(const DeviceMemory& memory, const ProblemSpec& spec, Storage storage)
    : StagedProblem(memory, checked(spec).shape, spec.tree, storage, [&](Kind kind, int segment) {
        const AttentionShape& shape = spec.shape;
        const std::size_t count = kind == Kind::q ? query_rows(shape) * shape.head_dim
                                                  : static_cast<std::size_t>(spec.tree.length(segment)) * kv_row(shape);
        return draw_bytes(spec.seed, stream_of(static_cast<int>(kind), segment), count,
                          kind == Kind::q ? spec.q_scale : 1.0, shape.dtype);
      }) {}

StagedProblem::StagedProblem(const DeviceMemory& memory, const AttentionShape& shape, const SharingTree& tree,
                             Storage storage, const Source& source)
    : memory_(&memory), shape_(shape), tree_(storage == Storage::shared ? tree : tree.flattened()) {
  validate_problem(shape, tree);
  const DType dt = shape_.dtype;
  const std::size_t elem = dtype_size(dt);
  // One allocation per tensor kind, sub-allocated per segment (or per sequence): a batch of
  // thousands of sequences would otherwise pay thousands of device allocations.
  auto stage = [&](Kind kind, int parts, std::size_t total, std::vector<ConstTensor>& views) {
    buffers_.emplace_back(memory, total * elem);
    auto* base = static_cast<std::byte*>(buffers_.back().data());
    // Thousands of short suffixes: generate them on all threads, then copy in order.
    std::vector<std::vector<std::byte>> bytes(static_cast<std::size_t>(parts));
    detail::parallel_items(bytes.size(), [&](std::size_t i) { bytes[i] = source(kind, static_cast<int>(i)); });
    std::size_t offset = 0;  // elements
    for (const std::vector<std::byte>& b : bytes) {
      const std::size_t n = b.size() / elem;
      memory.copy_from_host(base + offset * elem, b.data(), b.size());
      views.push_back(ConstTensor{n == 0 ? nullptr : base + offset * elem, dt, n});
      offset += n;
    }
  };
  std::vector<ConstTensor> q;
  stage(Kind::q, 1, query_rows(shape_) * shape_.head_dim, q);
  inputs_.q = q.front();
  const std::size_t row = kv_row(shape_);
  const std::size_t kv_total = static_cast<std::size_t>(tree.total_tokens()) * row;
  stage(Kind::k, tree.num_segments(), kv_total, inputs_.k);
  stage(Kind::v, tree.num_segments(), kv_total, inputs_.v);
  if (storage == Storage::redundant) {
    // Each sequence gets its own copy of its path, assembled on the device from the staged
    // segments; the shared copies are then freed so the footprint is that of redundant storage.
    std::size_t total = 0;
    for (int s = 0; s < tree.num_seqs(); ++s) total += static_cast<std::size_t>(tree.path_length(s)) * row;
    const AttentionInputs segments = inputs_;
    std::vector<Buffer> shared = std::move(buffers_);
    buffers_.clear();
    buffers_.push_back(std::move(shared.front()));  // q stays
    inputs_.k.clear();
    inputs_.v.clear();
    for (const auto* src : {&segments.k, &segments.v}) {
      buffers_.emplace_back(memory, total * elem);
      auto* base = static_cast<std::byte*>(buffers_.back().data());
      std::size_t offset = 0;  // elements
      for (int s = 0; s < tree.num_seqs(); ++s) {
        const std::size_t first = offset;
        for (int seg : tree.path(s)) {
          memory.copy(base + offset * elem, (*src)[seg].data, (*src)[seg].numel * elem);
          offset += (*src)[seg].numel;
        }
        (src == &segments.k ? inputs_.k : inputs_.v)
            .push_back(ConstTensor{offset == first ? nullptr : base + first * elem, dt, offset - first});
      }
    }
    memory.synchronize();
  }
  const std::size_t rows = query_rows(shape_);
  buffers_.emplace_back(memory, rows * shape_.head_dim * elem);
  outputs_.o = Tensor{buffers_.back().data(), dt, rows * shape_.head_dim};
  buffers_.emplace_back(memory, rows * dtype_size(lse_dtype(dt)));
  outputs_.lse = Tensor{buffers_.back().data(), lse_dtype(dt), rows};
}

void StagedProblem::poison_outputs() const {
  memory_->fill(outputs_.o.data, 0xFF, outputs_.o.numel * dtype_size(outputs_.o.dtype));
  memory_->fill(outputs_.lse.data, 0xFF, outputs_.lse.numel * dtype_size(outputs_.lse.dtype));
  memory_->synchronize();
}

Results StagedProblem::fetch() const {
  auto fetch_one = [this](const Tensor& t) {
    std::vector<std::byte> bytes(t.numel * dtype_size(t.dtype));
    memory_->copy_to_host(bytes.data(), t.data, bytes.size());
    return decode_values(bytes.data(), t.numel, t.dtype);
  };
  memory_->synchronize();
  return Results{fetch_one(outputs_.o), fetch_one(outputs_.lse)};
}

Results run_backend(const AttentionBackend& backend, const Problem& problem, Storage storage, const PlanOptions& options) {
  const StagedProblem staged(backend.memory(), problem, storage);
  const auto plan = backend.plan(staged.shape(), staged.tree(), options);
  staged.poison_outputs();
  plan->run(staged.inputs(), staged.outputs());
  return staged.fetch();
}

}  // namespace hydragen
