# Global sanitizer flags from LEANATTN_SANITIZE (the asan and tsan presets set it).
if(LEANATTN_SANITIZE)
  string(REPLACE ";" "," _leanattn_san "${LEANATTN_SANITIZE}")
  add_compile_options(-fsanitize=${_leanattn_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_leanattn_san})
endif()

# leanattn_tsan_skip_oracle(targets...): in ThreadSanitizer builds, compiles the given targets
# without TSan's instrumentation. Used for the test oracle, the fp64 reference and the harness
# (random fills, the same-precision baseline, the accuracy check): single-threaded arithmetic over
# every element that, instrumented, took most of the tsan stage's test time (EngineTest.RandomProblems
# alone: 480 of 635 s), while the engine, its thread pool and the executors, which run the threads,
# stay instrumented. The engine's threads read what the oracle wrote only after the test handed it
# to them (a happens-before TSan sees through the pool's atomics).
function(leanattn_tsan_skip_oracle)
  if("thread" IN_LIST LEANATTN_SANITIZE)
    foreach(target IN LISTS ARGN)
      if(TARGET ${target})
        target_compile_options(${target} PRIVATE -fno-sanitize=thread)
      endif()
    endforeach()
  endif()
endfunction()
