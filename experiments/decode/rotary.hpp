#pragma once
// The rotary embedding's turns as a table, made once per decoder on the host in fp64: every runtime's
// rope_append reads it (Rotary, runtime.hpp), so the host and CUDA runtimes turn by the same fp32
// cosines and sines, and no step computes an fp64 angle (the CUDA kernel's fp64 pow and sincos took
// most of its ~10 us a layer at B = 1024: perf-notes v32).
#include <vector>

namespace hydragen::decode {

// cos and sin of position * theta^(-2i/D) for i < D/2 and positions [0, positions), the angles in
// fp64, rounded to fp32: [positions][2][D / 2], each position's cosines, then its sines.
// std::invalid_argument for a head_dim that is not positive and even, positions < 1, theta <= 0.
std::vector<float> rotary_table(double theta, int head_dim, int positions);

}  // namespace hydragen::decode
