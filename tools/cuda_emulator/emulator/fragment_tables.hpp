// The PTX ISA's fragment tables for the warp-level instructions the decode kernel uses, written
// from the ISA manual independently of the kernel's lane maps (src/cuda/common/mma_layout.hpp),
// which the emulated ldmatrix and mma.sync (shim/cuda/collective/ptx.cuh) obey: a kernel whose maps
// disagree with these tables computes wrong products (tests/cuda_emulator/mutant_test.cpp).
//   ldmatrix.m8n8.x4: lane 8j + r gives the address of row r of matrix j; lane t receives in
//     register j elements (t / 4, 2 (t % 4) + h) of matrix j, h = 0, 1 (low half first); with
//     .trans, elements (2 (t % 4) + h, t / 4).
//   mma.m16n8k16 (.row.col, 16-bit inputs, fp32 accumulators), g = lane / 4, t = lane % 4:
//     A register i, half h: row g + 8 (i % 2), column (k) 2t + h + 8 (i / 2)
//     B register i, half h: row (k) 2t + h + 8 i, column (n) g
//     C/D element c:         row g + 8 (c / 2), column 2t + (c % 2)
#pragma once

namespace leanattn::emulator {

struct Element {
  int row;
  int col;
};

constexpr Element ldmatrix_element(int lane, int half, bool trans) {
  return trans ? Element{2 * (lane % 4) + half, lane / 4}
               : Element{lane / 4, 2 * (lane % 4) + half};
}

constexpr Element mma_a_element(int lane, int reg, int half) {
  return {lane / 4 + 8 * (reg % 2), 2 * (lane % 4) + half + 8 * (reg / 2)};
}

constexpr Element mma_b_element(int lane, int reg, int half) {
  return {2 * (lane % 4) + half + 8 * reg, lane / 4};
}

constexpr Element mma_c_element(int lane, int c) {
  return {lane / 4 + 8 * (c / 2), 2 * (lane % 4) + c % 2};
}

}  // namespace leanattn::emulator
