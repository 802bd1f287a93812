// The cost of the compute ceiling's instructions on this machine, measured (roofline.hpp's
// VectorCosts): a loop of independent FMAs at the width of the kernel's SIMD target gives the
// cycles per vector FMA; a loop that widens one vector of f16 (or bf16) values loaded from L1
// before each FMA gives, less the FMA's own cost, the marginal cycles of a widening beside the
// FMAs (zero where the conversions issue on pipes of their own). Each figure is the best of
// seven runs of 1-2 ms timed by the steady clock and converted to core cycles at the measured
// clock. Server cores differ here: Zen 3 and the Xeons run two 256- or 512-bit FMAs per cycle,
// Zen 4 splits a 512-bit one over both pipes (one per cycle), so an assumed two pipes would put
// the ceiling of an AVX-512 kernel on Zen 4 at half its true height.
#pragma once

#include <string>

#include "bench_runner/roofline.hpp"

namespace leanattn::bench {

// The costs on the compiled target that runs the CPU kernel `simd` ("AVX3", "AVX3_BF16", "AVX2",
// ...; "" = the best supported; throws Error("simd") for one not supported here). The FMA and
// the f16 / bf16 widenings are measured; the 8-bit loaders' integer ops keep the assumed half
// cycle (they run on vector integer pipes that differ from core to core) and a bf16 dot product
// counts as an FMA. Returns roofline.hpp's assumed costs (measured = false, `source` saying why)
// when clock_ghz is 0 (no clock) or this file was not compiled for that target.
VectorCosts measure_vector_costs(const std::string& simd, double clock_ghz);

}  // namespace leanattn::bench
