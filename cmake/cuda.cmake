# Decides whether the CUDA engine is built (LEANATTN_CUDA = ON | OFF | AUTO) and, when it is,
# enables the CUDA language for the whole project: C++20, sm_80 and sm_90 unless the caller names
# CMAKE_CUDA_ARCHITECTURES (scripts/device-check.sh passes 90), the CUDA toolkit's imported
# targets (CUDA::cudart_static), and leanattn_cuda_warnings (the nvcc counterpart of
# leanattn_warnings).
# Included by the top-level CMakeLists.txt; src/cuda and tests/cuda are added when
# LEANATTN_WITH_CUDA is ON.
set(LEANATTN_WITH_CUDA OFF)
if(LEANATTN_CUDA STREQUAL "ON" OR LEANATTN_CUDA STREQUAL "AUTO")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(LEANATTN_WITH_CUDA ON)
  elseif(LEANATTN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LEANATTN_CUDA=ON but no CUDA compiler was found")
  endif()
elseif(NOT LEANATTN_CUDA STREQUAL "OFF")
  message(FATAL_ERROR "LEANATTN_CUDA must be ON, OFF or AUTO (got '${LEANATTN_CUDA}')")
endif()

if(LEANATTN_WITH_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
    set(CMAKE_CUDA_ARCHITECTURES "80;90")
  endif()
  # nvcc must use the same host compiler as the C++ code (one libstdc++, one ABI).
  if(NOT DEFINED CMAKE_CUDA_HOST_COMPILER AND CMAKE_CXX_COMPILER)
    set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}")
  endif()
  enable_language(CUDA)
  # C++20 for .cu files. CMake 3.25 does not know nvcc's C++20 switch (later versions do).
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  find_package(CUDAToolkit REQUIRED)
  # nvcc flags of every .cu file of the project (the engine's kernels, the tools' probes).
  set(LEANATTN_CUDA_FLAGS --expt-relaxed-constexpr -lineinfo)

  # Warnings of the host half of .cu files (the device half has no -W flags; ptxas spills are
  # checked by scripts/check-ptxas.sh). The CUDA headers come in as system headers.
  add_library(leanattn_cuda_warnings INTERFACE)
  target_compile_options(leanattn_cuda_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wshadow>)
  if(LEANATTN_WARNINGS_AS_ERRORS)
    target_compile_options(leanattn_cuda_warnings INTERFACE
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
  endif()
endif()
if(LEANATTN_WITH_CUDA)
  message(STATUS "leanattn: CUDA engine ON (architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "leanattn: CUDA engine OFF")
endif()
