# leanattn_warnings: the warning flags every leanattn target builds with (errors in CI).
add_library(leanattn_warnings INTERFACE)
target_compile_options(leanattn_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
if(LEANATTN_WARNINGS_AS_ERRORS)
  target_compile_options(leanattn_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
