// Whether this build runs under AddressSanitizer (LEANATTN_EMULATOR_ASAN), and its interface
// when it does: the fibers announce their stack switches, shared memory is poisoned.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define LEANATTN_EMULATOR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LEANATTN_EMULATOR_ASAN 1
#endif
#endif

#if defined(LEANATTN_EMULATOR_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
