#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "hydragen/harness.hpp"
#include "plan_forms.hpp"
#include "plan_golden.hpp"
#include "planner.hpp"
#include "sweep/grid.hpp"

namespace hydragen::cuda::golden {

namespace {

struct Device {
  const char* name;
  DeviceLimits limits;
};
// The two devices with rows in device-rates.csv, and one without wgmma.
const Device kDevices[] = {{"H100", {132, true, true, "NVIDIA H100 80GB HBM3"}},
                           {"H200", {132, true, true, "NVIDIA H200"}},
                           {"A100", {108, false, false, "NVIDIA A100-SXM4-80GB"}}};

// FNV-1a over every table of the schedule: equal hashes, equal schedules (item for item).
struct Hash {
  std::uint64_t h = 1469598103934665603ULL;
  void add(long long v) {
    for (int i = 0; i < 8; ++i) {
      h ^= static_cast<std::uint64_t>(v >> (8 * i)) & 0xff;
      h *= 1099511628211ULL;
    }
  }
  void add(const std::vector<int>& v) {
    add(static_cast<long long>(v.size()));
    for (int x : v) add(x);
  }
};

std::uint64_t schedule_hash(const Schedule& s) {
  Hash h;
  for (const auto* items : {&s.narrow_items, &s.wide_items}) {
    h.add(static_cast<long long>(items->size()));
    for (const WorkItem& i : *items) {
      for (int x : {i.kv_head, i.first_row, i.num_rows, i.first_segment, i.num_segments, i.token_begin, i.token_end}) h.add(x);
    }
  }
  for (const auto* v : {&s.wide_worker_items, &s.item_segments, &s.gather_query, &s.row_query, &s.row_limit, &s.row_leaf,
                        &s.merge_offsets, &s.merge_rows}) {
    h.add(*v);
  }
  for (const GemmChunk& c : s.gemm_chunks) {
    for (int x : {c.segment, c.token_begin, c.token_end, c.rows, c.first_row, c.gathered_row}) h.add(x);
  }
  return h.h;
}

std::string decided(const Planned& p) {
  const Schedule& s = p.schedule;
  const PlanDecisions& d = p.decisions;
  const LaunchChoices& l = d.launches;
  char line[320];
  std::snprintf(line, sizeof line,
                "wide=%s tile=%d narrow=%s leaf_sms=%d workers=%d/%d items=%zu/%zu runs=%zu chunks=%zu rows=%d fold=%d merge=%d "
                "overlap=%d partials=%d recipe=%s schedule=%016llx",
                kernel_name(d.wide_kernel), l.wide_tile_tokens, kernel_name(d.narrow_kernel), d.leaf_sms, l.wide_workers, l.narrow_workers,
                s.wide_items.size(), s.narrow_items.size(), s.wide_worker_items.size(), s.gemm_chunks.size(), s.num_rows(), l.folds(),
                l.run_merge, l.run_merge && l.overlap_merge, s.max_partials(), recipe_name(d.recipe),
                static_cast<unsigned long long>(schedule_hash(s)));
  // The rows product, parts merged by the merge kernel and leaves cached as usual are every plan's but
  // those options' (and rules'): named only where they differ.
  std::string out = line;
  if (l.narrow_product == NarrowProduct::tokens) out += " product=tokens";
  if (l.folds() && l.fold_rounds != kFoldRounds) out += " fold_rounds=" + std::to_string(l.fold_rounds);
  if (d.build.wide_cluster > 1) out += " cluster=" + std::to_string(d.build.wide_cluster);
  if (l.leaf_evict_first) out += " leaf_evict_first";
  if (!d.log.empty() && d.log.back().rule == "tune") out += " tune=" + d.log.back().inputs;  // the plans a GPU would time
  return out;
}

struct Form {
  std::string backend;
  PlanOptions options;  // resolved
  std::string label;    // the backend and the options it was asked for
};

Form form(const std::string& backend, const std::vector<PlanOption>& declared, const PlanOptions& asked) {
  return {backend, resolve_options(backend, declared, asked), backend + (asked.empty() ? "" : ":" + asked.text())};
}

// Every form the harness covers; for the presets' larger points, each backend's default and
// cuda-hydragen's leaves=beside (the beside layout's choices).
std::vector<Form> forms(bool all) {
  std::vector<Form> out;
  if (!all) {
    return {form("cuda-flash", flash_options(), {}), form("cuda-hydragen", hydragen_options(), {}),
            form("cuda-hydragen", hydragen_options(), PlanOptions::parse("leaves=beside")), form("cuda-hydragen-cublas", {}, {})};
  }
  for (const PlanOptions& v : flash_variants()) out.push_back(form("cuda-flash", flash_options(), v));
  for (const PlanOptions& v : hydragen_variants()) out.push_back(form("cuda-hydragen", hydragen_options(), v));
  out.push_back(form("cuda-hydragen-cublas", {}, {}));
  return out;
}

Planned planned(const Form& f, const AttentionShape& shape, const SharingTree& tree, const DeviceLimits& device) {
  if (f.backend == "cuda-flash") return plan_flash(shape, tree, f.options, device);
  if (f.backend == "cuda-hydragen") return plan_hydragen(shape, tree, f.options, device);
  return plan_hydragen_cublas(shape, tree, device);
}

void add_problem(const std::string& problem, const AttentionShape& shape, const SharingTree& tree, bool all_forms,
                 std::vector<Line>& lines) {
  // What has CUDA kernels (dispatch.cuh's list): fp32, fp16 and bf16 at D 64 and 128.
  if (shape.dtype == DType::fp64 || (shape.head_dim != 64 && shape.head_dim != 128)) return;
  for (const Form& f : forms(all_forms)) {
    if (f.backend == "cuda-hydragen-cublas" && shape.dtype == DType::fp32) continue;  // 16-bit only
    for (const Device& d : kDevices) {
      lines.push_back({f.label + " | " + problem + " | " + d.name, decided(planned(f, shape, tree, d.limits))});
    }
  }
}

}  // namespace

std::vector<Line> plan_lines() {
  std::vector<Line> lines;
  for (const std::string& name : sweep::preset_names()) {
    for (const sweep::ShapePoint& p : sweep::preset(name).shapes) {
      if (!p.tokens.empty()) continue;
      const AttentionShape shape = make_shape(p.batch, p.q_len, p.q_heads, p.kv_heads, p.head_dim, p.dtype);
      char problem[200];
      std::snprintf(problem, sizeof problem, "%s %s B%d P%d S%d q%d Hq%d Hkv%d D%d %s", name.c_str(), std::string(dtype_name(p.dtype)).c_str(),
                    p.batch, p.prefix, p.suffix, p.q_len, p.q_heads, p.kv_heads, p.head_dim, p.tree_text().c_str());
      add_problem(problem, shape, p.sharing_tree({}), false, lines);
    }
  }
  for (const HarnessCase& c : harness_cases()) {
    for (DType dtype : {DType::fp32, DType::fp16, DType::bf16}) {
      for (Storage storage : {Storage::shared, Storage::redundant}) {
        const std::string problem =
            "harness " + c.name + " " + std::string(dtype_name(dtype)) + " " + std::string(storage_name(storage));
        add_problem(problem, c.shape(dtype), c.planned_tree(storage), true, lines);
      }
    }
  }
  return lines;
}

}  // namespace hydragen::cuda::golden
