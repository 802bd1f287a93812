// The CUDA engine: runs any Plan with one persistent kernel launch (one CTA per plan worker),
// fp16/bf16, head_dim 64/128/256, any GQA group, contiguous or paged KV with any page size.
// No CUDA types here: pointers are device pointers and streams travel as void* (a cudaStream_t,
// nullptr for the default stream).
//
//   leanattn::cuda::Engine engine;                      // current device
//   leanattn::Plan plan = engine.plan(problem);         // lean, one worker per resident CTA
//   engine.prepare(problem, plan, workspace, stream);   // optional: upload now (before capture)
//   engine.run(problem, plan, leanattn::dense_tensors(problem, q, k, v, table, out, lse),
//              workspace, stream);                      // asynchronous on `stream`
//
// A split pair's pieces go to workspace slots; the last CTA to finish a piece merges all of them
// in the plan's fixed order, so no CTA waits for another (any grid is deadlock-free) and repeated
// runs are bitwise identical. Launches need no memset: the arrival counters are left at zero by
// every launch, so a launch can be captured in a CUDA graph and replayed. See docs/cuda-engine.md.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "leanattn/hardware.hpp"
#include "leanattn/plan.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::cuda {

// A failed CUDA call: the message names the call and carries the CUDA error name and string.
class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& what, int code) : std::runtime_error(what), code_(code) {}
  int code() const noexcept { return code_; }  // the cudaError_t value

 private:
  int code_;
};

// True when a CUDA device can be used here (a driver and at least one device). Never throws.
bool device_available();

// The calling thread's current CUDA device (what EngineOptions::device -1 means). Throws
// CudaError when there is none.
std::int32_t current_device();

struct DeviceInfo {
  std::int32_t ordinal = 0;
  std::string name;
  std::int32_t sm_count = 0;
  std::int32_t cc_major = 0;
  std::int32_t cc_minor = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t memory_bytes = 0;
  std::int32_t smem_per_sm = 0;     // bytes of shared memory per multiprocessor
  std::int32_t smem_per_block = 0;  // bytes of shared memory one CTA may have (opt-in limit)
};

// One CTA of a traced launch (Engine::run_traced): the SM it ran on, and its start, end and
// time spent in last-arriver merges, in nanoseconds of the GPU's global timer.
struct CtaTrace {
  std::int32_t sm = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t merge_ns = 0;
};

struct EngineOptions {
  std::int32_t device = -1;  // CUDA device ordinal; -1: the calling thread's current device
  // Workers (CTAs) that plan() makes plans for; 0: the occupancy of the kernel the problem will
  // run (resident blocks per SM x SMs, from the occupancy API). Plans with any worker count run.
  std::int32_t workers = 0;
  // Uploaded plans kept on the device (least recently used evicted; plans read by a captured
  // CUDA graph are kept until clear_plan_cache()). seq_lens are part of a plan, so a serving
  // loop uploads one plan per decode step; >= 1.
  std::int32_t plan_cache_entries = 64;
  // DevicePlannedStep on compute capability 9.0 and later: the decode kernel is launched as the
  // planner's programmatic dependent (griddepcontrol), so its CTAs start while the planner runs
  // and wait for its plan, instead of after it finishes. false: plain back-to-back launches
  // (the A/B of CudaGraph.DependentLaunchAgainstPlainLaunches). Ignored before sm_90.
  bool dependent_launch = true;
};

class Engine {
 public:
  // Throws CudaError when the device cannot be used.
  explicit Engine(const EngineOptions& options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const DeviceInfo& device() const;

  // Whether a compiled kernel configuration covers the problem (Q and KV of one 16-bit type, a
  // compiled head_dim) and fits this device's shared memory per CTA (head_dim 256 needs more
  // than sm_86 / sm_89 have); why_not() says what is missing ("" when can_run). run() launches
  // exactly the configuration these accept.
  bool can_run(const DecodeProblem& problem) const;
  std::string why_not(const DecodeProblem& problem) const;

  // Workers a plan for `problem` gets: EngineOptions::workers, or the kernel's occupancy.
  std::int32_t workers_for(const DecodeProblem& problem) const;

  // A plan for this device (lean with LineOrder::automatic gets head_major: a CTA works on one
  // pair at a time). Throws Error for an invalid or unsupported problem.
  Plan plan(const DecodeProblem& problem, const PlanOptions& options = {}) const;

  // Device bytes run() needs as workspace for `plan` (0 when no pair is split).
  std::int64_t workspace_bytes(const Plan& plan) const;

  // Everything run() does once rather than per launch: sets up the problem's kernel, uploads
  // `plan` (if not cached yet) and zeroes the arrival counters of `workspace` (if this engine has
  // not seen it yet). run() does these by itself when needed; call prepare() first when the run
  // will be captured in a CUDA graph, where uploads are not allowed. The engine-owned workspace
  // is allocated by a first run() outside the capture.
  void prepare(const DecodeProblem& problem, const Plan& plan, void* workspace, void* stream);

  // Launches `plan` (made for `problem`, any worker count) on `stream`. tensors and workspace are
  // device pointers; workspace holds workspace_bytes(plan), 16-byte aligned, and serves one
  // stream (launches on one stream are ordered, so it is reused without a reset, by plans of any
  // shape); a second stream is refused with an Error naming `workspace`. Its arrival counters
  // are zeroed the first time this engine sees it (every launch leaves them at zero). After
  // freeing a workspace, or to hand it to another stream once the first is synchronised, call
  // forget_workspace(). Validates everything but block-table contents first (throws Error naming
  // the argument). The plan's upload, when it is new, is asynchronous on `stream`.
  // Thread-safe: calls from several host threads are serialised inside the engine.
  void run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
           void* workspace, void* stream);

  // Same with a workspace owned by the engine, one per stream (grown as needed, outside a
  // capture; a grown-out buffer a captured graph used is kept until the engine is destroyed).
  void run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
           void* stream = nullptr);

  // run() with the engine's workspace and a per-CTA trace (one record per worker), then waits
  // for the stream: shows residency (CTAs per SM at once) and the merge tail. For diagnosis
  // (scripts/device-check.sh), not for serving; not during a capture.
  std::vector<CtaTrace> run_traced(const DecodeProblem& problem, const Plan& plan,
                                   const DecodeTensors& tensors, void* stream = nullptr);

  // plan() then run() with the engine's workspace.
  void decode(const DecodeProblem& problem, const DecodeTensors& tensors, void* stream = nullptr,
              const PlanOptions& options = {});

  // Forgets what the engine knows of `workspace` (its zeroed counters, its stream): call it
  // before freeing a workspace, or before using it on another stream.
  void forget_workspace(void* workspace);

  // Frees the uploaded plans. Graphs that captured a run of one of them must not be replayed
  // afterwards.
  void clear_plan_cache();

 private:
  friend class DevicePlannedStep;
  friend class HostPlannedStep;
  friend struct FixedStep;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A decode step whose plan is made on the GPU from device-resident lengths, for CUDA graphs that
// replay every step with new lengths (vLLM's full-graph decode): run() launches the device
// planner (one CTA; the lean plan, head-major, equal to Engine::plan's for the same lengths,
// workers and tile) and then the decode kernel, back to back on one stream, with nothing on the
// host in between, so a captured run() replays correctly for any lengths within the capture's
// bounds.
//
//   leanattn::cuda::DevicePlannedStep step(engine, shape);   // bounds: shape's batch and lengths
//   cudaStreamBeginCapture(s, ...); step.run(d_seq_lens, tensors, s); cudaStreamEndCapture(...);
//   ... each step: write d_seq_lens [batch] on the device, cudaGraphLaunch(graph, s) ...
//   step.check(s);  // when wanted: throws if a replay's length was out of range
class DevicePlannedStep {
 public:
  // shape: the step's heads, widths, types, layout, q_len and variant; its batch is the batch
  // capacity (requests past a step's batch get length 0) and its longest request the most keys
  // any request may have. Workers: the engine's (occupancy); tile: options.tile_tokens, or the
  // default for head_dim (a length-dependent tile would change the plan's shape). Lean,
  // head-major only (Error naming strategy, batch_invariant or order otherwise).
  // Allocates the planner's buffers and a workspace for the bound (2 x workers slots) and zeroes
  // its counters. Throws Error for an unsupported shape or options.
  DevicePlannedStep(Engine& engine, const DecodeProblem& shape, const PlanOptions& options = {});
  ~DevicePlannedStep();
  DevicePlannedStep(const DevicePlannedStep&) = delete;
  DevicePlannedStep& operator=(const DevicePlannedStep&) = delete;

  // Launches the planner over seq_lens (device int32 [batch], read when the kernels run) and the
  // decode kernel on `stream`. tensors: device pointers laid out for the shape. Validates the
  // tensors against the shape; lengths are the device's to check: one the host would refuse
  // (negative, past the bound, or in [1, q_len)) makes the planner plan nothing (the outputs keep
  // the previous step's values) and sets a sticky word that check() reports. Graphs that captured
  // a run read this object's buffers: destroy it after them.
  void run(const std::int32_t* seq_lens, const DecodeTensors& tensors, void* stream);
  // Waits for `stream`, then throws Error("seq_lens", ...) naming the request when any run since
  // the last check was refused (and clears the word). Not during a capture (Error naming
  // stream).
  void check(void* stream);

  std::int32_t workers() const;
  std::int32_t tile_tokens() const;
  std::int64_t device_bytes() const;  // the planner's buffers and the workspace
  // Whether run() launches the decode kernel as the planner's programmatic dependent
  // (EngineOptions::dependent_launch, on sm_90 and later with both kernels' code built for it).
  bool dependent_launch() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A decode step whose plan is made on the host each step and copied into fixed device buffers
// that a decode kernel captured once reads (FlashInfer's plan/run): for serving loops that know
// the lengths on the host. plan() makes the step's plan (lean, head-major: the plan the device
// planner makes for the same lengths) and copies it asynchronously; run() launches only the
// decode kernel, so a graph that captured run() once replays every later step's plan.
//
//   leanattn::cuda::HostPlannedStep step(engine, shape);    // bounds: shape's batch and lengths
//   cudaStreamBeginCapture(s, ...); step.run(tensors, s); cudaStreamEndCapture(...);
//   ... each step: step.plan(lens, s); cudaGraphLaunch(graph, s) ...
class HostPlannedStep {
 public:
  // As DevicePlannedStep's: the shape's batch is the capacity and its longest request the bound;
  // workers from the engine, tile from options (or the default); lean, head-major only. Also
  // allocates two pinned staging buffers of the plan region's size.
  HostPlannedStep(Engine& engine, const DecodeProblem& shape, const PlanOptions& options = {});
  ~HostPlannedStep();
  HostPlannedStep(const HostPlannedStep&) = delete;
  HostPlannedStep& operator=(const HostPlannedStep&) = delete;

  // Plans seq_lens (host int32 [<= capacity]; requests past them get length 0) and copies the
  // plan and the lengths into the fixed buffers, asynchronously on `stream`, ordered before the
  // next run() or replay on it (use one stream, from one host thread at a time). Waits at most
  // for the copy of two calls back: the two staging buffers alternate, so the host runs up to
  // about two steps ahead of the GPU. Throws Error naming seq_lens (more lengths than the capacity;
  // a length negative, above the bound or in [1, q_len)) before anything is copied, and Error
  // naming stream during a capture (plan() is the host's work between replays). Before the first
  // plan(), run() does nothing.
  void plan(std::span<const std::int32_t> seq_lens, void* stream);
  // Launches the decode kernel over the plan last copied in (capturable). tensors: device
  // pointers laid out for the shape, validated against it. Graphs that captured a run read this
  // object's buffers: destroy them before it.
  void run(const DecodeTensors& tensors, void* stream);

  std::int32_t workers() const;
  std::int32_t tile_tokens() const;
  std::int64_t device_bytes() const;  // the fixed plan buffers and the workspace

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leanattn::cuda
