#pragma once
// DLPack tensors (anything with __dlpack__: PyTorch, NumPy, CuPy, JAX) as the library's views. No
// copy is ever made: a tensor whose memory is not in our layout (row-major, D fastest) is refused
// with its name, as is one of another dtype, device or shape (tensor_dims.hpp says which shapes).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "hydragen/tensor.hpp"
#include "hydragen/tensor_dims.hpp"

namespace hydragen::python {

namespace nb = nanobind;

// Where a tensor lives: the memory's name ("host" or "cuda", as DeviceMemory::name()) and device id.
struct Place {
  std::string memory;
  int device_id = 0;
  std::string text() const;  // "host", "cuda:0"
};

// One DLPack tensor with the name errors give it ("q", "k[3]", "o").
struct DlTensor {
  std::string name;
  nb::ndarray<> array;  // held while a run reads it: the producer keeps the memory alive

  std::vector<std::int64_t> sizes() const;
  DType dtype() const;  // throws std::invalid_argument naming a dtype we do not take
  Place place() const;  // throws std::invalid_argument naming a device that is neither CPU nor CUDA
  const void* data() const { return array.data(); }
  std::size_t numel() const { return array.size(); }
};

// Imports `object` through DLPack. Throws nb::type_error when it is not a tensor, and
// std::invalid_argument when `writable` is asked of one its producer marks read-only.
DlTensor import_tensor(nb::handle object, const std::string& name, bool writable = false);

// Throws std::invalid_argument naming the tensor when its dims are not `expected` or its strides
// not row-major contiguous (a dim of size 1 may have any stride).
void check_layout(const DlTensor& t, const Dims& expected);
// check_layout, then the same for a dtype or place other than the problem's.
void check_tensor(const DlTensor& t, const Dims& expected, DType dtype, const Place& place);

ConstTensor const_view(const DlTensor& t);
Tensor view(const DlTensor& t);

// A problem's K or V: a sequence of one tensor per segment ([length, Hkv, D] each), or one tensor
// holding every segment back to back in segment order ([total tokens, Hkv, D]).
struct Segments {
  std::string name;  // "k" or "v"
  std::vector<DlTensor> tensors;
  bool packed = false;
};
// `name`: "k" or "v"; elements are named "k[i]".
Segments import_segments(nb::handle object, const std::string& name);
// The dims of one of them, before the shape is known (the shape is read off Q and the first K).
const DlTensor& first_segment(const Segments& segments);
// check_tensor on each, against segment_dims (packed_dims for one packed tensor); a list must hold
// one tensor per segment of the tree.
void check_segments(const Segments& segments, const AttentionShape& shape, const SharingTree& tree, const Place& place);
// One view per segment, after check_segments.
std::vector<ConstTensor> segment_tensors(const Segments& segments, const AttentionShape& shape, const SharingTree& tree);

// The shape that Q and K describe (shape_from_dims; scale 0: 1/sqrt(D)), in Q's dtype, validated
// against the tree (validate_problem).
AttentionShape problem_shape(const DlTensor& q, const Segments& k, const SharingTree& tree, float scale);

// The values of a tensor on the host, widened exactly to fp64 (a CUDA tensor is copied once the
// device's queued work is done), after check_layout.
std::vector<double> host_values(const DlTensor& t, const Dims& expected);
// Each segment's values so, every segment in shape.dtype (Q's).
std::vector<std::vector<double>> host_segment_values(const Segments& segments, const AttentionShape& shape,
                                                    const SharingTree& tree);

// nanobind's DLPack dtype and ours.
DType to_dtype(nb::dlpack::dtype dtype, const std::string& name);
nb::dlpack::dtype to_dlpack(DType dtype);

}  // namespace hydragen::python
