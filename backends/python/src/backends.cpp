// What this build has: its backends, whether each can run here (and why not), and memory of
// theirs for outputs a framework cannot allocate itself (JAX arrays are immutable).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "bindings.hpp"
#include "hydragen/backends.hpp"
#include "hydragen/memory.hpp"
#include "tensors.hpp"

namespace hydragen::python {

namespace {

struct BackendInfo {
  std::string name;
  std::string memory;              // "host" or "cuda"
  std::string unavailable_reason;  // empty when it can run here
  std::string summary;             // what it is, dtypes, head dims, trees
  std::string options;             // its plan options ("form=auto|wide|narrow (...) ..."), or empty
};

std::vector<BackendInfo> backend_infos() {
  std::vector<BackendInfo> infos;
  for (const AttentionBackend* b : default_registry().all()) {
    infos.push_back({b->name(), std::string(b->memory().name()), b->memory().unavailable_reason(), b->summary(),
                     describe_options(b->options())});
  }
  return infos;
}

// An uninitialised tensor in one of our memories, owned by the returned array, which DLPack (and, on
// the host, the buffer protocol) exports.
nb::ndarray<nb::array_api> empty(const std::vector<std::size_t>& shape, const std::string& dtype, const std::string& memory,
                    int device_id) {
  const DType d = parse_dtype(dtype);
  std::size_t count = 1;
  for (std::size_t n : shape) count *= n;
  auto* buffer = new Buffer(memory_named(memory), count * dtype_size(d));
  nb::capsule owner(buffer, [](void* p) noexcept { delete static_cast<Buffer*>(p); });
  const int device = memory == "host" ? nb::device::cpu::value : nb::device::cuda::value;
  return nb::ndarray<nb::array_api>(buffer->data(), shape.size(), shape.data(), owner, nullptr, to_dlpack(d), device, device_id);
}

}  // namespace

void bind_backends(nb::module_& m) {
  nb::class_<BackendInfo>(m, "BackendInfo", "One backend of this build, and whether it can run here.")
      .def_ro("name", &BackendInfo::name)
      .def_ro("memory", &BackendInfo::memory)
      .def_prop_ro("available", [](const BackendInfo& b) { return b.unavailable_reason.empty(); })
      .def_ro("unavailable_reason", &BackendInfo::unavailable_reason)
      .def_ro("summary", &BackendInfo::summary)
      .def_ro("options", &BackendInfo::options)
      .def("__repr__", [](const BackendInfo& b) {
        return "<" + b.name + " (" + b.memory + "): " +
               (b.unavailable_reason.empty() ? "available" : "unavailable: " + b.unavailable_reason) + ">";
      });
  m.def("backends", &backend_infos, "Every backend of this build, in registration order.");
  m.def("built_with_cuda", &built_with_cuda, "Whether this build has the CUDA backends (GPU or not).");
  m.def(
      "sharing_rates", [](const std::string& memory) { return memory_named(memory).sharing_rates(); }, nb::arg("memory") = "host",
      "What detect_sharing's cost model weighs partials at for tensors in this memory: the CUDA planner's rates "
      "for the current GPU (\"cuda\"), else none measured.");
  m.def("empty", &empty, nb::arg("shape"), nb::arg("dtype"), nb::arg("memory"), nb::arg("device_id") = 0,
        "An uninitialised tensor in our host or CUDA memory, exported through DLPack.");
}

}  // namespace hydragen::python
