#pragma once
// Marks functions that compile for both host and device code. Core stays free of CUDA headers:
// under nvcc the qualifiers apply, under a host compiler they vanish.
#if defined(__CUDACC__)
#define HYDRAGEN_HD __host__ __device__ __forceinline__
#else
#define HYDRAGEN_HD inline
#endif
