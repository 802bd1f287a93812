// A call's problem and tensors as the library takes them (DecodeProblem + DecodeTensors), read
// without copies from the description the Python layer builds (_leanattn.Problem, problem.cpp)
// and from the output arrays: shapes, element strides and data pointers come from the arrays'
// DLPack descriptors, through the DLPack exchange API where their type has it (PyTorch: no
// Python call) and nanobind's import otherwise (NumPy, CuPy, any __dlpack__). Every rule broken
// raises ValueError / TypeError naming the Python argument. The shape contract is
// leanattn.decode's docstring (python/leanattn/_decode.py). Used by bind_decode.cpp,
// bind_reference.cpp and bind_step.cpp.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>
#include <string>

#include "array_rules.hpp"
#include "leanattn/plan.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::python {

// A call's problem and tensors, read from its arrays.
struct DecodeViews {
  DecodeProblem problem;
  DecodeTensors tensors;
  Device device;
  std::string q_hint;      // q's dtype hint (the outputs are read with it)
  bool token_dim = false;  // q (so out and lse) has the q_len dimension: 4-D q
  bool packed = false;     // query_start_loc: q, out and lse are [total query tokens, ...]
  bool shared_kv = false;  // no v_cache: V is the leading values of K's rows
};

// Reads the _leanattn.Problem `problem` into `views` (overwritten; its seq_lens vector keeps its
// capacity, so a reused DecodeViews allocates nothing). The lengths: every request at `bound`
// when bound >= 0 (a step's shape), else the problem's seq_lens, else the plan's (neither:
// ValueError naming seq_lens). Without v_cache, V's width unset means the plan's, else head_dim.
// TypeError naming `problem` when it is not a Problem.
void read_problem(DecodeViews& views, nb::handle problem, const Plan* plan = nullptr,
                  std::int32_t bound = -1);

// How the arrays of a call were read: not at all, through the DLPack exchange API, or through
// nanobind's import.
enum class ArraysRead { none, exchanged, imported };

// The planned fast path's problem, with no Python object made for it: q, k_cache and v_cache (or
// None) as they are, the plan's lengths and V's width, `scale` and the variant's values (no
// arrays, scales or type hints). The arrays are read through the exchange API (PyTorch), else
// imported if they are host arrays with a float32 or float16 q (NumPy); neither: not read (the
// caller takes the general path).
ArraysRead read_planned(DecodeViews& views, nb::handle q, nb::handle k_cache, nb::handle v_cache,
                        const Plan& plan, float scale, const AttentionVariant& variant);

// out's layout for the problem read into `views`, as its messages write it.
const char* output_layout(const DecodeViews& views);

// Points views.tensors at the outputs, written by the executor: out [batch, (q_len,) q_heads,
// V's width] (packed: [total query tokens, q_heads, V's width]) in q's dtype, lse [batch,
// (q_len,) q_heads] (packed: [total query tokens, q_heads]) float32 with contiguous heads (or
// None), on q's device. Call after read_problem. With exchange_only, false (having attached
// nothing) when out or lse has no DLPack exchange API; otherwise true.
bool attach_outputs(DecodeViews& views, nb::handle out, nb::handle lse, bool exchange_only = false);

// The attention variant (docs/numerics.md, "Variants"): window_left -1 = none, softcap 0 = off,
// sinks and alibi_slopes [q_heads] float32, contiguous, on q's device, or None (TypeError /
// ValueError naming the argument). Called by read_problem.
void attach_variant(DecodeViews& views, bool causal, std::int32_t window_left, float softcap,
                    const std::optional<InArray>& sinks,
                    const std::optional<InArray>& alibi_slopes);

// The scales of an 8-bit cache (docs/numerics.md, "Quantized KV caches"): k_scale and v_scale of
// the same shape, [] or [1] (per tensor), [kv_heads] (per KV head), or the cache's shape without
// head_dim (per token and KV head; paged caches through the block table). Required for an 8-bit
// cache, refused otherwise (ValueError naming the argument), float32 (TypeError), C-contiguous
// and on q's device (ValueError). Their values are read by the executor only (docs/validation.md:
// checked on the host, the caller's on a device). V in K's rows (views.shared_kv) takes k_scale:
// v_scale must be None then. Called by read_problem.
void attach_kv_scales(DecodeViews& views, const std::optional<InArray>& k_scale,
                      const std::optional<InArray>& v_scale);

}  // namespace leanattn::python
