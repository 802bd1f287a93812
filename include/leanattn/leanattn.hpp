// The umbrella header of the installed library (`find_package(leanattn)`, leanattn::leanattn):
// the problem and tensor descriptions, the planner and its heuristics, the CPU engine, the fp64
// reference, the executors by name (make_executor("cuda") too in a CUDA build) and their cache
// (ExecutorCache), and the version. The CUDA engine's own class has its own header,
// leanattn/cuda_engine.hpp, installed by CUDA builds only (leanattn_WITH_CUDA in
// leanattnConfig.cmake).
//
//   leanattn::cpu::Engine engine;                        // one worker per core
//   leanattn::Plan plan = engine.plan(problem);          // plain data: print it, reuse it
//   engine.run(problem, plan, leanattn::dense_tensors(problem, q, k, v, nullptr, out, lse));
#pragma once

#include "leanattn/cpu_engine.hpp"
#include "leanattn/dtype.hpp"
#include "leanattn/error.hpp"
#include "leanattn/executor.hpp"
#include "leanattn/executor_cache.hpp"
#include "leanattn/hardware.hpp"
#include "leanattn/heuristics.hpp"
#include "leanattn/huge_pages.hpp"
#include "leanattn/plan.hpp"
#include "leanattn/plan_format.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/reference.hpp"
#include "leanattn/tensors.hpp"
#include "leanattn/version.hpp"
