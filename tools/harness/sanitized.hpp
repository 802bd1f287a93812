// LEANATTN_SANITIZED (and harness::kSanitized): defined when this translation unit is built with
// AddressSanitizer or ThreadSanitizer (GCC's __SANITIZE_*__, Clang's __has_feature), for tests
// that run fewer random trials or smaller sizes there: the sanitizers look for memory and thread
// errors, which a shorter sweep still exercises; the release stage runs the full one.
// LEANATTN_THREAD_SANITIZED (harness::kThreadSanitized): ThreadSanitizer alone (the CPU suites'
// SIMD targets differ by sanitizer: tests/cpu/tested_targets.hpp).
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LEANATTN_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LEANATTN_SANITIZED 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define LEANATTN_THREAD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LEANATTN_THREAD_SANITIZED 1
#endif
#endif

namespace leanattn::harness {

#ifdef LEANATTN_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

#ifdef LEANATTN_THREAD_SANITIZED
inline constexpr bool kThreadSanitized = true;
#else
inline constexpr bool kThreadSanitized = false;
#endif

}  // namespace leanattn::harness
