#pragma once
// What a sweep measures: a list of problem shapes, each timed on a list of backends. Presets are
// the grids DESIGN.md and the paper name; explicit flags give a Cartesian product.
#include <string>
#include <string_view>
#include <vector>

#include "point.hpp"

namespace hydragen::sweep {

struct Grid {
  std::vector<std::string> backends;  // "name" or "name:shared|redundant"
  std::vector<ShapePoint> shapes;
};

// The Cartesian product of the lists, in the order given (batch outermost, trees innermost).
std::vector<ShapePoint> product(const std::vector<DType>& dtypes, const std::vector<int>& batch,
                                const std::vector<int>& prefix, const std::vector<int>& suffix,
                                const std::vector<int>& q_len, const std::vector<int>& q_heads,
                                const std::vector<int>& kv_heads, const std::vector<int>& head_dim,
                                const std::vector<TreeSpec>& trees = {TreeSpec{}});

// paper-fig4, grid, mha, cpu, quick; throws std::invalid_argument listing them for another name.
Grid preset(std::string_view name);
std::vector<std::string> preset_names();
std::string preset_description(std::string_view name);

// "name[:storage]" -> a Point of that shape.
Point make_point(const std::string& backend_spec, const ShapePoint& shape);

}  // namespace hydragen::sweep
