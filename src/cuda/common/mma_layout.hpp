// Where each lane's data sits in the warp-level m16n8k16 MMA (mma.sync, PTX ISA "Matrix Fragments
// for mma.m16n8k16") and which shared-memory row each lane hands to ldmatrix. Host/device, so the
// kernel (collective/warp_attention.cuh) uses these maps and the CPU test
// (tests/cuda/mma_layout_test.cpp) checks them against an emulation of ldmatrix and mma written
// from the PTX ISA's fragment tables.
//
// Shapes, for one warp and one 16-token step:
//   S[16 rows][16 tokens] = Q[16 rows][head_dim] . K[16 tokens][head_dim]^T   (two n8 tiles)
//   O[16 rows][head_dim] += P[16 rows][16 tokens] . V[16 tokens][head_dim]    (head_dim/8 tiles)
// The accumulator fragments of S's two n8 tiles are, element for element, the A fragment of P
// (FlashAttention-2's register reuse): a[0] = S0{c0,c1}, a[1] = S0{c2,c3}, a[2] = S1{c0,c1},
// a[3] = S1{c2,c3}.
#pragma once

#include "leanattn/core/host_device.hpp"

namespace leanattn::cuda {

// Row of accumulator element c (0..3) of `lane` in an m16n8 tile: c0, c1 on row lane/4, c2, c3
// on row lane/4 + 8.
LEANATTN_HOST_DEVICE constexpr int acc_row(int lane, int c) {
  return lane / 4 + 8 * (c / 2);
}

// Column of accumulator element c: 2 (lane % 4) + (c % 2).
LEANATTN_HOST_DEVICE constexpr int acc_col(int lane, int c) {
  return 2 * (lane % 4) + (c % 2);
}

struct RowCol {
  int row;
  int col;
};

// ldmatrix.x4 address maps: lanes 8j .. 8j + 7 give the 8 row addresses of 8x8 matrix j, and
// register j of every lane receives matrix j's fragment.
//
// Q (the A operand, row-major [rows][head_dim]) at k-step kk: matrices (rows 0-7, k 0-7),
// (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15) = a[0..3].
LEANATTN_HOST_DEVICE constexpr RowCol q_ldmatrix_row(int lane) {
  return {lane % 8 + 8 * ((lane / 8) % 2), 8 * (lane / 16)};
}

// K (the B operand of S = Q K^T; K row-major [tokens][head_dim] is B column-major) at k-step kk,
// 16 tokens: matrices (tokens 0-7, k 0-7), (tokens 0-7, k 8-15), (tokens 8-15, k 0-7),
// (tokens 8-15, k 8-15) = {b0, b1} of n-tile 0, then {b0, b1} of n-tile 1. Non-transposed.
LEANATTN_HOST_DEVICE constexpr RowCol k_ldmatrix_row(int lane) {
  return {lane % 8 + 8 * (lane / 16), 8 * ((lane / 8) % 2)};
}

// V (the B operand of O = P V; V row-major [tokens][head_dim] is B row-major, so ldmatrix.trans)
// for output columns dj .. dj + 15: matrices (tokens 0-7, cols 0-7), (tokens 8-15, cols 0-7),
// (tokens 0-7, cols 8-15), (tokens 8-15, cols 8-15) = {b0, b1} of column tile 2j, then of 2j + 1.
LEANATTN_HOST_DEVICE constexpr RowCol v_ldmatrix_row(int lane) {
  return {lane % 8 + 8 * ((lane / 8) % 2), 8 * (lane / 16)};
}

}  // namespace leanattn::cuda
