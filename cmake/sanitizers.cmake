# Global sanitizer flags from LEANATTN_SANITIZE (the asan and tsan presets set it).
if(LEANATTN_SANITIZE)
  string(REPLACE ";" "," _leanattn_san "${LEANATTN_SANITIZE}")
  add_compile_options(-fsanitize=${_leanattn_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_leanattn_san})
endif()
