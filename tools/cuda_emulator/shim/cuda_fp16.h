// Stands in for the CUDA toolkit's <cuda_fp16.h> in the host build of the decode kernel (the emulator's
// include path puts shim/ first): the project's own 16-bit types (emulator/device_types.hpp).
#pragma once

#include "emulator/device_types.hpp"
