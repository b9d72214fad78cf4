#include "tensors.hpp"

#include <stdexcept>

#include "hydragen/attention.hpp"
#include "hydragen/backends.hpp"
#include "hydragen/dtype.hpp"

namespace hydragen::python {

namespace {

std::string dlpack_name(nb::dlpack::dtype d) {
  using Code = nb::dlpack::dtype_code;
  const char* kind = "type";
  switch (static_cast<Code>(d.code)) {
    case Code::Int: kind = "int"; break;
    case Code::UInt: kind = "uint"; break;
    case Code::Float: kind = "float"; break;
    case Code::Bfloat: kind = "bfloat"; break;
    case Code::Complex: kind = "complex"; break;
    case Code::Bool: kind = "bool"; break;
    default: break;
  }
  return kind + std::to_string(d.bits) + (d.lanes == 1 ? "" : "x" + std::to_string(d.lanes));
}

std::string list_text(const std::vector<std::int64_t>& values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

// A list of segments must have one tensor per segment of the tree.
void check_count(const Segments& segments, const SharingTree& tree) {
  if (segments.packed || segments.tensors.size() == static_cast<std::size_t>(tree.num_segments())) return;
  throw std::invalid_argument(segments.name + ": " + std::to_string(segments.tensors.size()) +
                              " tensors, the tree has " + std::to_string(tree.num_segments()) + " segments (" +
                              tree.describe() + ")");
}

}  // namespace

std::string Place::text() const { return memory == "host" ? memory : memory + ":" + std::to_string(device_id); }

std::vector<std::int64_t> DlTensor::sizes() const {
  std::vector<std::int64_t> s;
  for (std::size_t i = 0; i < array.ndim(); ++i) s.push_back(static_cast<std::int64_t>(array.shape(i)));
  return s;
}

DType DlTensor::dtype() const { return to_dtype(array.dtype(), name); }

Place DlTensor::place() const {
  switch (array.device_type()) {
    case nb::device::cpu::value:
    case nb::device::cuda_host::value: return {"host", 0};
    case nb::device::cuda::value:
    case nb::device::cuda_managed::value: return {"cuda", array.device_id()};
    default:
      throw std::invalid_argument(name + ": on DLPack device type " + std::to_string(array.device_type()) +
                                  ", neither the CPU nor a CUDA GPU");
  }
}

DlTensor import_tensor(nb::handle object, const std::string& name, bool writable) {
  DlTensor t{name, {}};
  // No implicit conversion: a tensor is taken as it is, or refused.
  if (writable && nb::try_cast(object, t.array, false)) return t;
  nb::ndarray<nb::ro> read_only;
  if (nb::try_cast(object, read_only, false)) {
    if (writable) {
      throw std::invalid_argument(name + ": read-only (a NumPy array with writeable=False, say): pass a writable "
                                         "tensor, or none to have one allocated");
    }
    t.array = nb::ndarray<>(read_only);
    return t;
  }
  if (!nb::hasattr(object, "__dlpack__")) {
    throw nb::type_error((name + ": expected a tensor with __dlpack__ (PyTorch, NumPy, CuPy, JAX), got " +
                          nb::type_name(object.type()).c_str())
                             .c_str());
  }
  // Its producer refused: ask again for the reason (PyTorch's for a tensor that requires grad).
  try {
    object.attr("__dlpack__")();
  } catch (const nb::python_error& e) {
    throw std::invalid_argument(name + ": its __dlpack__ refused: " + nb::str(e.value()).c_str());
  }
  throw std::invalid_argument(name + ": its DLPack export is not a tensor we can read");
}

void check_layout(const DlTensor& t, const Dims& expected) {
  check_dims(t.name, t.sizes(), expected);
  if (t.numel() == 0 || t.array.stride_ptr() == nullptr) return;
  std::int64_t want = 1;
  for (std::size_t i = t.array.ndim(); i-- > 0;) {
    if (t.array.shape(i) != 1 && t.array.stride(i) != want) {
      const std::vector<std::int64_t> strides(t.array.stride_ptr(), t.array.stride_ptr() + t.array.ndim());
      throw std::invalid_argument(t.name + ": strides " + list_text(strides) + " (elements) of shape " +
                                  list_text(t.sizes()) +
                                  " are not row-major contiguous: pass a contiguous tensor (PyTorch: .contiguous())");
    }
    want *= static_cast<std::int64_t>(t.array.shape(i));
  }
}

void check_tensor(const DlTensor& t, const Dims& expected, DType dtype, const Place& place) {
  check_layout(t, expected);
  if (const DType d = t.dtype(); d != dtype) {
    throw std::invalid_argument(t.name + ": dtype " + std::string(dtype_name(d)) + ", expected " +
                                std::string(dtype_name(dtype)));
  }
  if (const Place p = t.place(); p.memory != place.memory || p.device_id != place.device_id) {
    throw std::invalid_argument(t.name + ": on " + p.text() + ", expected on " + place.text());
  }
}

ConstTensor const_view(const DlTensor& t) { return ConstTensor{t.numel() ? t.data() : nullptr, t.dtype(), t.numel()}; }

Tensor view(const DlTensor& t) { return Tensor{t.numel() ? t.array.data() : nullptr, t.dtype(), t.numel()}; }

Segments import_segments(nb::handle object, const std::string& name) {
  Segments s{name, {}, false};
  if (!nb::isinstance<nb::list>(object) && !nb::isinstance<nb::tuple>(object)) {
    s.tensors.push_back(import_tensor(object, name));
    s.packed = true;
    return s;
  }
  std::size_t i = 0;
  for (nb::handle item : object) s.tensors.push_back(import_tensor(item, name + "[" + std::to_string(i++) + "]"));
  return s;
}

const DlTensor& first_segment(const Segments& segments) {
  if (segments.tensors.empty()) throw std::invalid_argument(segments.name + ": an empty list (a tree has at least one segment)");
  return segments.tensors.front();
}

void check_segments(const Segments& segments, const AttentionShape& shape, const SharingTree& tree, const Place& place) {
  for (const DlTensor& t : segments.tensors) require_same_dtype("q", shape.dtype, t.name, t.dtype());
  if (segments.packed) return check_tensor(segments.tensors.front(), packed_dims(shape, tree), shape.dtype, place);
  check_count(segments, tree);
  for (int i = 0; i < tree.num_segments(); ++i) {
    check_tensor(segments.tensors[static_cast<std::size_t>(i)], segment_dims(shape, tree, i), shape.dtype, place);
  }
}

std::vector<ConstTensor> segment_tensors(const Segments& segments, const AttentionShape& shape, const SharingTree& tree) {
  if (segments.packed) return segment_views(const_view(segments.tensors.front()), shape, tree);
  std::vector<ConstTensor> views;
  for (const DlTensor& t : segments.tensors) views.push_back(const_view(t));
  return views;
}

AttentionShape problem_shape(const DlTensor& q, const Segments& k, const SharingTree& tree, float scale) {
  const AttentionShape shape = shape_from_dims(q.sizes(), first_segment(k).sizes(), q.dtype(), scale);
  validate_problem(shape, tree);
  return shape;
}

std::vector<double> host_values(const DlTensor& t, const Dims& expected) {
  check_layout(t, expected);
  const DType dtype = t.dtype();
  const Place place = t.place();
  if (place.memory == "host") return decode_values(t.data(), t.numel(), dtype);
  const DeviceMemory& memory = memory_named(place.memory);
  memory.synchronize();  // the caller's kernels may still be writing it, on any stream
  std::vector<std::byte> bytes(t.numel() * dtype_size(dtype));
  memory.copy_to_host(bytes.data(), t.data(), bytes.size());
  return decode_values(bytes.data(), t.numel(), dtype);
}

std::vector<std::vector<double>> host_segment_values(const Segments& segments, const AttentionShape& shape,
                                                    const SharingTree& tree) {
  for (const DlTensor& t : segments.tensors) require_same_dtype("q", shape.dtype, t.name, t.dtype());
  std::vector<std::vector<double>> values;
  if (segments.packed) {
    const std::vector<double> all = host_values(segments.tensors.front(), packed_dims(shape, tree));
    const std::size_t row = static_cast<std::size_t>(shape.kv_heads) * shape.head_dim;
    std::size_t offset = 0;
    for (int i = 0; i < tree.num_segments(); ++i) {
      const std::size_t n = static_cast<std::size_t>(tree.length(i)) * row;
      values.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(offset), all.begin() + static_cast<std::ptrdiff_t>(offset + n));
      offset += n;
    }
    return values;
  }
  check_count(segments, tree);
  for (int i = 0; i < tree.num_segments(); ++i) {
    values.push_back(host_values(segments.tensors[static_cast<std::size_t>(i)], segment_dims(shape, tree, i)));
  }
  return values;
}

DType to_dtype(nb::dlpack::dtype d, const std::string& name) {
  using Code = nb::dlpack::dtype_code;
  if (d.lanes == 1 && d.code == static_cast<std::uint8_t>(Code::Float)) {
    if (d.bits == 64) return DType::fp64;
    if (d.bits == 32) return DType::fp32;
    if (d.bits == 16) return DType::fp16;
  }
  if (d.lanes == 1 && d.code == static_cast<std::uint8_t>(Code::Bfloat) && d.bits == 16) return DType::bf16;
  throw std::invalid_argument(name + ": dtype " + dlpack_name(d) + " is not one we take (fp64, fp32, fp16, bf16)");
}

nb::dlpack::dtype to_dlpack(DType dtype) {
  switch (dtype) {
    case DType::fp64: return nb::dtype<double>();
    case DType::fp32: return nb::dtype<float>();
    case DType::fp16: return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case DType::bf16: return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
  }
  throw std::invalid_argument("to_dlpack: unknown dtype");
}

}  // namespace hydragen::python
