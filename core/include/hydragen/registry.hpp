#pragma once
// A name -> backend table. Components add their backends explicitly (register_*_backends), so no
// static-initialisation order or linker dead-stripping decides what exists.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hydragen/attention.hpp"

namespace hydragen {

class BackendRegistry {
 public:
  // Throws std::invalid_argument if the name is taken.
  void add(std::unique_ptr<AttentionBackend> backend);
  // Throws std::invalid_argument naming the unknown backend and listing the known ones.
  const AttentionBackend& get(std::string_view name) const;
  bool contains(std::string_view name) const;
  std::vector<const AttentionBackend*> all() const;  // in registration order
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<AttentionBackend>> backends_;
};

}  // namespace hydragen
