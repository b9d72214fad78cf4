#include "hydragen/registry.hpp"

#include <stdexcept>

namespace hydragen {

void BackendRegistry::add(std::unique_ptr<AttentionBackend> backend) {
  if (contains(backend->name())) throw std::invalid_argument("backend '" + backend->name() + "' is registered twice");
  backends_.push_back(std::move(backend));
}

bool BackendRegistry::contains(std::string_view name) const {
  for (const auto& b : backends_) {
    if (b->name() == name) return true;
  }
  return false;
}

const AttentionBackend& BackendRegistry::get(std::string_view name) const {
  for (const auto& b : backends_) {
    if (b->name() == name) return *b;
  }
  std::string known;
  for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("backend '" + std::string(name) + "' is not registered (known: " + known + ")");
}

std::vector<const AttentionBackend*> BackendRegistry::all() const {
  std::vector<const AttentionBackend*> out;
  for (const auto& b : backends_) out.push_back(b.get());
  return out;
}

std::vector<std::string> BackendRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& b : backends_) out.push_back(b->name());
  return out;
}

}  // namespace hydragen
