#include "hydragen/cpu/cpu_backends.hpp"
namespace hydragen {
void register_cpu_backends(BackendRegistry&) {}
}  // namespace hydragen
