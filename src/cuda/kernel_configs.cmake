# The decode kernel's configuration table: the one list of what is compiled. A row is
# "<dtype> <head_dim> <warps_m>": the 16-bit type of Q, K, V and the output, the head dimension, and
# the warp rows of a CTA (1: GQA groups of up to 16 query heads; 4: up to 64, more in several
# passes). From it leanattn_generate_kernels() writes one instantiation .cu per row (nvcc compiles
# them in parallel) and kernel_table.hpp, the same rows as a C++ type list for the run-time lookup
# (kernel_registry.cpp). can_run() and the dispatch read that list, so adding a row here is all a
# new configuration needs.
set(LEANATTN_CUDA_KERNEL_TABLE
  "f16 64 1"   "f16 64 4"
  "f16 128 1"  "f16 128 4"
  "f16 256 1"  "f16 256 4"
  "bf16 64 1"  "bf16 64 4"
  "bf16 128 1" "bf16 128 4"
  "bf16 256 1" "bf16 256 4")

# Build only part of the table (quicker development builds), e.g. -DLEANATTN_CUDA_HEAD_DIMS=128
# -DLEANATTN_CUDA_DTYPES=bf16. Problems outside the built part are reported as unsupported.
set(LEANATTN_CUDA_HEAD_DIMS "64;128;256" CACHE STRING "head_dims of the CUDA kernels to build")
set(LEANATTN_CUDA_DTYPES "f16;bf16" CACHE STRING "dtypes of the CUDA kernels to build")

# leanattn_generate_kernels(<sources-var> <generated-dir>): writes the files, returns the .cu list.
function(leanattn_generate_kernels sources_var dir)
  set(sources "")
  set(types "")
  foreach(row IN LISTS LEANATTN_CUDA_KERNEL_TABLE)
    string(REGEX REPLACE " +" ";" fields "${row}")
    list(GET fields 0 LEANATTN_CFG_DTYPE)
    list(GET fields 1 LEANATTN_CFG_HEAD_DIM)
    list(GET fields 2 LEANATTN_CFG_WARPS_M)
    if(NOT LEANATTN_CFG_HEAD_DIM IN_LIST LEANATTN_CUDA_HEAD_DIMS OR
       NOT LEANATTN_CFG_DTYPE IN_LIST LEANATTN_CUDA_DTYPES)
      continue()
    endif()
    set(LEANATTN_CFG_NAME
        "${LEANATTN_CFG_DTYPE}_d${LEANATTN_CFG_HEAD_DIM}_wm${LEANATTN_CFG_WARPS_M}")
    set(file "${dir}/decode_${LEANATTN_CFG_NAME}.cu")
    configure_file(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/instantiation.cu.in ${file} @ONLY)
    list(APPEND sources ${file})
    list(APPEND types
         "KernelConfig<DType::${LEANATTN_CFG_DTYPE}, ${LEANATTN_CFG_HEAD_DIM}, ${LEANATTN_CFG_WARPS_M}>")
  endforeach()
  if(NOT sources)
    message(FATAL_ERROR "LEANATTN_CUDA_HEAD_DIMS / LEANATTN_CUDA_DTYPES leave no CUDA kernel to build")
  endif()
  list(JOIN types ",\n                                 " LEANATTN_CFG_TYPE_LIST)
  configure_file(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/kernel_table.hpp.in
                 ${dir}/cuda/kernel_table.hpp @ONLY)
  set(${sources_var} ${sources} PARENT_SCOPE)
endfunction()
