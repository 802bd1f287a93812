# The decode kernel's configuration table: the one list of what is compiled. A row is
# "<dtype> <kv_bits> <head_dim> <warps_m> [<head_dim_v> <warps_v> <v_source>]": the 16-bit type
# of Q and the output (and of the MMA operands), the width of K and V in memory (16: the same type
# as Q; 8: an fp8 e4m3 / e5m2 or int8 cache, the format chosen at run time, converted to the 16-bit
# type in shared memory), the head dimension, and the warp rows of a CTA (1: GQA groups of up to
# 16 query heads; 4: up to 64, more in several passes); then, for K and V of different widths, V's
# width, the warps its columns are split over (a warp's registers hold 16 rows x 256 fp32 columns
# at most) and where V is read from (v: its own cache; k: the leading head_dim_v columns of K's
# rows, the absorbed MLA cache). DeepSeek's shapes: K 192 / V 128 (the model's own attention,
# one query head per KV head) and absorbed MLA's K 576 / V 512 (every query head on one latent
# KV head: 32 rows per pass). From it leanattn_generate_kernels() writes one instantiation .cu per row (nvcc compiles
# them in parallel) and kernel_table.hpp, the same rows as a C++ type list for the run-time lookup
# (kernel_registry.cpp). can_run() and the dispatch read that list, so adding a row here is all a
# new configuration needs.
set(LEANATTN_CUDA_KERNEL_TABLE
  "f16 16 64 1"   "f16 16 64 4"   "f16 8 64 1"   "f16 8 64 4"
  "f16 16 128 1"  "f16 16 128 4"  "f16 8 128 1"  "f16 8 128 4"
  "f16 16 256 1"  "f16 16 256 4"  "f16 8 256 1"  "f16 8 256 4"
  "bf16 16 64 1"  "bf16 16 64 4"  "bf16 8 64 1"  "bf16 8 64 4"
  "bf16 16 128 1" "bf16 16 128 4" "bf16 8 128 1" "bf16 8 128 4"
  "bf16 16 256 1" "bf16 16 256 4" "bf16 8 256 1" "bf16 8 256 4"
  "f16 16 192 1 128 1 v"  "bf16 16 192 1 128 1 v"
  "f16 16 576 2 512 2 k"  "bf16 16 576 2 512 2 k")

# Build only part of the table (quicker development builds), e.g. -DLEANATTN_CUDA_HEAD_DIMS=128
# -DLEANATTN_CUDA_DTYPES=bf16 -DLEANATTN_CUDA_KV_BITS=16. Problems outside the built part are
# reported as unsupported.
set(LEANATTN_CUDA_HEAD_DIMS "64;128;192;256;576" CACHE STRING "head_dims of the CUDA kernels to build")
set(LEANATTN_CUDA_DTYPES "f16;bf16" CACHE STRING "dtypes of the CUDA kernels to build")
set(LEANATTN_CUDA_KV_BITS "16;8" CACHE STRING "K/V widths of the CUDA kernels to build")

# leanattn_generate_kernels(<sources-var> <generated-dir>): writes the files, returns the .cu list.
function(leanattn_generate_kernels sources_var dir)
  set(sources "")
  set(types "")
  foreach(row IN LISTS LEANATTN_CUDA_KERNEL_TABLE)
    string(REGEX REPLACE " +" ";" fields "${row}")
    list(GET fields 0 LEANATTN_CFG_DTYPE)
    list(GET fields 1 LEANATTN_CFG_KV_BITS)
    list(GET fields 2 LEANATTN_CFG_HEAD_DIM)
    list(GET fields 3 LEANATTN_CFG_WARPS_M)
    set(LEANATTN_CFG_HEAD_DIM_V ${LEANATTN_CFG_HEAD_DIM})
    set(LEANATTN_CFG_WARPS_V 1)
    set(LEANATTN_CFG_V_FROM_K false)
    list(LENGTH fields field_count)
    if(field_count EQUAL 7)
      list(GET fields 4 LEANATTN_CFG_HEAD_DIM_V)
      list(GET fields 5 LEANATTN_CFG_WARPS_V)
      list(GET fields 6 v_source)
      if(v_source STREQUAL "k")
        set(LEANATTN_CFG_V_FROM_K true)
      elseif(NOT v_source STREQUAL "v")
        message(FATAL_ERROR "kernel table row '${row}': v_source must be v or k")
      endif()
    elseif(NOT field_count EQUAL 4)
      message(FATAL_ERROR "kernel table row '${row}': 4 or 7 fields")
    endif()
    if(NOT LEANATTN_CFG_HEAD_DIM IN_LIST LEANATTN_CUDA_HEAD_DIMS OR
       NOT LEANATTN_CFG_DTYPE IN_LIST LEANATTN_CUDA_DTYPES OR
       NOT LEANATTN_CFG_KV_BITS IN_LIST LEANATTN_CUDA_KV_BITS)
      continue()
    endif()
    set(kv "")
    if(LEANATTN_CFG_KV_BITS EQUAL 8)
      set(kv "_kv8")
    endif()
    set(widths "")  # as kernel_handle() names it
    if(NOT LEANATTN_CFG_HEAD_DIM_V EQUAL LEANATTN_CFG_HEAD_DIM)
      set(widths "_v${LEANATTN_CFG_HEAD_DIM_V}")
    endif()
    if(LEANATTN_CFG_V_FROM_K)
      string(APPEND widths "k")
    endif()
    set(warps_v "")
    if(LEANATTN_CFG_WARPS_V GREATER 1)
      set(warps_v "_wv${LEANATTN_CFG_WARPS_V}")
    endif()
    set(LEANATTN_CFG_NAME
        "${LEANATTN_CFG_DTYPE}${kv}_d${LEANATTN_CFG_HEAD_DIM}${widths}_wm${LEANATTN_CFG_WARPS_M}${warps_v}")
    set(file "${dir}/decode_${LEANATTN_CFG_NAME}.cu")
    configure_file(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/instantiation.cu.in ${file} @ONLY)
    list(APPEND sources ${file})
    list(APPEND types
         "KernelConfig<DType::${LEANATTN_CFG_DTYPE}, ${LEANATTN_CFG_KV_BITS}, ${LEANATTN_CFG_HEAD_DIM}, ${LEANATTN_CFG_WARPS_M}, ${LEANATTN_CFG_HEAD_DIM_V}, ${LEANATTN_CFG_WARPS_V}, ${LEANATTN_CFG_V_FROM_K}>")
  endforeach()
  if(NOT sources)
    message(FATAL_ERROR "LEANATTN_CUDA_HEAD_DIMS / _DTYPES / _KV_BITS leave no CUDA kernel to build")
  endif()
  list(JOIN types ",\n                                 " LEANATTN_CFG_TYPE_LIST)
  configure_file(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/kernel_table.hpp.in
                 ${dir}/cuda/kernel_table.hpp @ONLY)
  set(${sources_var} ${sources} PARENT_SCOPE)
endfunction()
