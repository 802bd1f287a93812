# leanattn_warnings: the warning flags every leanattn target builds with (errors in CI).
add_library(leanattn_warnings INTERFACE)
target_compile_options(leanattn_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
# GCC 12 reports false -Wrestrict positives inside std::string at -O3 (GCC bug 105651).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(leanattn_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()
if(LEANATTN_WARNINGS_AS_ERRORS)
  target_compile_options(leanattn_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
