# Global sanitizer flags from LEANATTN_SANITIZE (the asan and tsan presets set it).
if(LEANATTN_SANITIZE)
  string(REPLACE ";" "," _leanattn_san "${LEANATTN_SANITIZE}")
  add_compile_options(-fsanitize=${_leanattn_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_leanattn_san})
endif()

# leanattn_tsan_uninstrumented(sources...): in ThreadSanitizer builds, the given sources of the
# calling folder compile without TSan's instrumentation. For the test oracle's loops over the whole
# cache (the fp64 reference and the same-precision baseline, which read the inputs and write results
# of their own): single-threaded arithmetic that, instrumented, took most of the tsan stage's test
# time (the four EngineTest.RandomProblems alone: 480 of 635 s; now about 20 s each). What runs or
# talks to threads stays instrumented: the engine, its pool, the executors, the checks, the random
# fills, and the harness code that reads the engine's outputs after a run. A planted race (the
# pool's pending_.fetch_sub made relaxed) is still reported (docs/testing.md).
function(leanattn_tsan_uninstrumented)
  if("thread" IN_LIST LEANATTN_SANITIZE)
    set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS -fno-sanitize=thread)
  endif()
endfunction()
