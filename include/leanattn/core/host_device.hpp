// The one macro header of the project: marks functions that must compile for the host and, when
// nvcc compiles the file, for the device too. Included by core/ headers only.
#pragma once

#if defined(__CUDACC__)
#define LEANATTN_HOST_DEVICE __host__ __device__
#define LEANATTN_FORCEINLINE __forceinline__
#else
#define LEANATTN_HOST_DEVICE
#define LEANATTN_FORCEINLINE inline __attribute__((always_inline))
#endif
