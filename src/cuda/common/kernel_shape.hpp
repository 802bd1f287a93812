// KernelShape<HeadDim, WarpsM, KvBits, HeadDimV, WarpsV, VFromK>: every compile-time size of one
// decode-kernel configuration (warp grid, tokens per pipeline stage, stages, shared-memory layout),
// as constexpr host/device code. Read by the kernel (src/cuda/kernel), by the host registry
// (shared-memory bytes for the launch and the occupancy query) and by the CPU tests (tests/cuda),
// which check that the layout fits and that the kernel's blocking gives the right answer when
// emulated on the CPU.
#pragma once

#include <cstdint>

namespace leanattn::cuda {

// A CTA has 4 warps in a WarpsM x WarpsV x WarpsN grid. The GQA group's query rows are packed
// into 16-row MMA tiles, one per warp row (WarpsM tiles = kRows rows per pass); the warp columns
// share out the tokens of each stage (WarpsN 16-token steps side by side). So WarpsM = 1 suits
// groups of up to 16 rows (MHA, most GQA), WarpsM = 4 groups of up to 64 (MQA-like); larger groups
// take several passes over the segment's tokens.
//
// K and V of different widths (DeepSeek's K 192 / V 128; absorbed MLA's K 576 / V 512): scores
// run over HeadDim, values and the output over HeadDimV. A 512-wide output does not fit one
// warp's registers (16 rows x 512 fp32 = 256 per thread), so WarpsV > 1 splits V's columns
// between the warps of a warp row: each computes the same scores (the same instructions on the
// same data: the same m and l, bitwise) and its own HeadDimV / WarpsV output columns. VFromK:
// V is the leading HeadDimV columns of K's rows (the absorbed MLA cache): the stages hold K only
// and the warps read V from K's tile, so every latent row is copied from memory once.
//
// KvBits 8 (an 8-bit cache): the pipeline stages hold K and V as loaded, 8 bits (half the bytes of
// a 16-bit stage), with the tokens' K and V scales; before its block is computed, the CTA converts
// a stage into one 16-bit K tile and one 16-bit V tile (collective/kv8_convert.cuh) that the warps
// read exactly as they read a 16-bit stage.
template <int HeadDim, int WarpsM, int KvBits = 16, int HeadDimV = HeadDim, int WarpsV = 1,
          bool VFromK = false>
struct KernelShape {
  static_assert(HeadDim == 64 || HeadDim == 128 || HeadDim == 192 || HeadDim == 256 ||
                    HeadDim == 576,
                "head_dim 64, 128, 192, 256 or 576");
  static_assert(HeadDimV % 16 == 0 && HeadDimV <= HeadDim,
                "head_dim_v: multiple of 16 <= head_dim");
  static_assert(WarpsM == 1 || WarpsM == 2 || WarpsM == 4, "4 warps in a WarpsM x WarpsN grid");
  static_assert(WarpsV == 1 || WarpsV == 2 || WarpsV == 4,
                "V's columns split over 1, 2 or 4 warps");
  static_assert(WarpsM * WarpsV <= 4, "4 warps in a WarpsM x WarpsV x WarpsN grid");
  static_assert(KvBits == 16 || KvBits == 8, "16-bit or 8-bit K and V");
  static_assert(KvBits == 16 || (HeadDimV == HeadDim && WarpsV == 1 && !VFromK),
                "8-bit caches: K and V of one width");

  static constexpr int kHeadDim = HeadDim;
  static constexpr int kHeadDimV = HeadDimV;
  static constexpr bool kVFromK = VFromK;
  static constexpr int kKvBits = KvBits;
  static constexpr bool kKv8 = KvBits == 8;
  static constexpr int kThreads = 128;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kWarpsM = WarpsM;
  static constexpr int kWarpsV = WarpsV;
  static constexpr int kWarpsN = kWarps / (WarpsM * WarpsV);
  static constexpr int kRows = 16 * WarpsM;         // query rows per pass over the tokens
  static constexpr int kVCols = HeadDimV / WarpsV;  // output columns of one warp
  static_assert(kVCols % 16 == 0, "a warp's output columns: whole k16 steps of P V");
  // Resident CTAs per SM the registers are budgeted for (__launch_bounds__): two CTAs of 128
  // threads leave each thread the full 255 registers.
  static constexpr int kMinBlocksPerSm = 2;
  static constexpr int kStepTokens = 16;  // tokens per MMA step (one k16 of P.V)

  // 16-byte chunks per 16-bit K/Q row, and 16-bit elements per chunk.
  static constexpr int kChunkElems = 8;
  static constexpr int kChunksPerRow = HeadDim / kChunkElems;
  // V's rows as the warps read them: their own tile (HeadDimV wide), or K's rows (VFromK).
  static constexpr int kVChunksPerRow = HeadDimV / kChunkElems;
  static constexpr int kVTileChunksPerRow = VFromK ? kChunksPerRow : kVChunksPerRow;
  // The same for K and V rows as loaded (8-bit: 16 elements per chunk).
  static constexpr int kLoadChunkElems = 16 / (KvBits / 8);
  static constexpr int kLoadChunksPerRow = HeadDim / kLoadChunkElems;
  static constexpr int kLoadVChunksPerRow = HeadDimV / kLoadChunkElems;

  // Tokens per pipeline stage: about 32 KiB of K and V (16-bit; V counted only where it has its
  // own tile), a whole number of rounds (one step of every warp column), at least one round.
  // head_dim 64: 128 tokens; 128: 64; 256: 64 (WarpsN 4: 64 KiB) or 32; K 192 / V 128: 64
  // (WarpsN 4); K 576 with V from K: 16.
  static constexpr int kRoundTokens = kStepTokens * kWarpsN;
  static constexpr int kTokenBytes = 2 * (HeadDim + (VFromK ? 0 : HeadDimV));
  static constexpr int kBlockTarget = 32768 / kTokenBytes / kRoundTokens * kRoundTokens;
  static constexpr int kBlockN = kBlockTarget > kRoundTokens ? kBlockTarget : kRoundTokens;
  static constexpr int kStepsPerWarp = kBlockN / kRoundTokens;
  static_assert(kBlockN % kRoundTokens == 0, "stage must split evenly over warps");

  static constexpr int kStageTileBytes = kBlockN * HeadDim * 2;            // K of one stage, 16-bit
  static constexpr int kLoadTileBytes = kBlockN * HeadDim * (KvBits / 8);  // ... as loaded
  // V of one stage (none where V is read from K's tile), 16-bit and as loaded.
  static constexpr int kVStageTileBytes = VFromK ? 0 : kBlockN * HeadDimV * 2;
  static constexpr int kLoadVTileBytes = VFromK ? 0 : kBlockN * HeadDimV * (KvBits / 8);
  // Three stages everywhere: with cp.async.wait_group(kStages - 2), two stages would leave nothing
  // in flight between one stage landing and the next being issued.
  static constexpr int kStages = 3;

  // 16-byte loads per thread for one K stage tile (V's copies ride along: the first
  // kLoadVChunksPerRow chunks of each row), and for the Q tile.
  static constexpr int kStageLoadsPerThread = kBlockN * kLoadChunksPerRow / kThreads;
  static constexpr int kQLoadsPerThread = kRows * kChunksPerRow / kThreads;
  static_assert(kBlockN * kLoadChunksPerRow % kThreads == 0, "stage loads split evenly");
  static_assert(kBlockN <= kThreads, "one thread per token loads an 8-bit stage's scales");
  // Stage loads whose row offsets (block-table reads) are computed together before their copies
  // are issued: 4 where the registers allow (head_dim <= 128), else 1.
  static constexpr int kKvLoadBatch = HeadDim <= 128 ? 4 : 1;
  static_assert(kStageLoadsPerThread % kKvLoadBatch == 0, "load batches split evenly");
  static_assert(kRows * kChunksPerRow % kThreads == 0, "query loads split evenly");

  // Query fragments stay in registers for head_dim <= 128 (32 registers); at 256 they would
  // push the accumulators (128 registers) into spills, so they are re-read from shared memory.
  static constexpr bool kQInRegisters = HeadDim <= 128;
  static constexpr int kQBytes = kRows * HeadDim * 2;
  // When Q lives in registers its tile is dead after the first block's fragments are read, so it
  // overlays V's last stage (first written by the copies issued after that read and a barrier):
  // 96 KiB of stages (and at most 1 KiB of row rules) for every head_dim <= 128 configuration,
  // which fits the 99 KiB a CTA may have on sm_86 / sm_89 and leaves 2 CTAs per SM on sm_90.
  static constexpr bool kQOverlaysStage = kQInRegisters;
  static_assert(!kQOverlaysStage || kQBytes <= kVStageTileBytes, "Q must fit in one stage tile");

  // Shared memory, in bytes from the dynamic base (128-byte aligned pieces):
  //   k:  [kComputeTiles][kBlockN][HeadDim] 16-bit, swizzled: the tiles the warps read (16-bit
  //       caches: the kStages pipeline stages themselves; 8-bit: one converted tile)
  //   v:  the same, [kBlockN][HeadDimV] (none with VFromK: the warps read V from k)
  //   q:  [kRows][HeadDim] 16-bit, swizzled: V's last tile (kQOverlaysStage), else first
  //   8-bit only: k8, v8 [kStages][kBlockN][HeadDim] bytes (the stages as loaded, row-major),
  //       then scales [kStages][2][kBlockN] float (K's, then V's, of each stage's tokens)
  //   row rules: [kRows] RowRule, last
  // After a pass over the tokens the q/k/v region is reused by the epilogue (from offset 0; the
  // next pass copies Q again):
  //   o:  [kWarpsN][kRows][kScratchRowFloats] float (per-warp-column partial outputs)
  //   m, l: [kWarpsN][kRows] float
  // and after a split piece by the last arriver's slot merge (epilogue.cuh, from offset 0).
  static constexpr int kComputeTiles = kKv8 ? 1 : kStages;
  static constexpr int kKOffset = kQOverlaysStage ? 0 : kQBytes;
  static constexpr int kVOffset = kKOffset + kComputeTiles * kStageTileBytes;
  static constexpr int kQOffset =
      kQOverlaysStage ? kVOffset + (kComputeTiles - 1) * kVStageTileBytes : 0;
  // Where the copies land: the stages as loaded (16-bit: the k and v tiles above).
  static constexpr int kLoadKOffset = kKv8 ? kVOffset + kVStageTileBytes : kKOffset;
  static constexpr int kLoadVOffset = kKv8 ? kLoadKOffset + kStages * kLoadTileBytes : kVOffset;
  static constexpr int kScalesOffset = kLoadVOffset + kStages * kLoadVTileBytes;
  static constexpr int kScalesBytes = kKv8 ? kStages * 2 * kBlockN * 4 : 0;
  // The pass's row rules (row_rules.hpp: RowRule, 16 bytes per row: the keys the row sees, its
  // query position and ALiBi slope), written once per pass and read by every step: in shared
  // memory rather than registers, which head_dim 256 does not have to spare.
  static constexpr int kRowRuleBytes = 16;
  static constexpr int kRowRulesOffset = kScalesOffset + kScalesBytes;
  static constexpr int kSmemBytes = kRowRulesOffset + kRows * kRowRuleBytes;
  static_assert(kRows <= kThreads, "one thread per row writes the row rules");

  static constexpr int kScratchRowFloats = HeadDimV + 4;  // padded against bank conflicts
  static constexpr int kScratchOOffset = 0;
  static constexpr int kScratchMOffset = kScratchOOffset + kWarpsN * kRows * kScratchRowFloats * 4;
  static constexpr int kScratchLOffset = kScratchMOffset + kWarpsN * kRows * 4;
  static constexpr int kScratchEnd = kScratchLOffset + kWarpsN * kRows * 4;
  static_assert(kScratchEnd <= kSmemBytes, "epilogue scratch must fit in the Q/K/V stages");
  static_assert(kSmemBytes <= 227 * 1024, "one CTA must fit an SM's shared memory");

  // The last arriver's slot merge (epilogue.cuh): per row chunk, the slots' m (then weights) and
  // l as [slots][rows] floats, the chunk's merged m and l per row, one float4 per thread of
  // partial sums. kMergeCapacity = slots x rows held at once; pairs with more slots than that
  // are merged by the serial fallback.
  static constexpr int kMergeMaxRows = 128;
  static constexpr int kMergePartBytes = kThreads * 16;
  static constexpr int kMergeTailBytes = 2 * kMergeMaxRows * 4 + kMergePartBytes;
  static constexpr int kMergeCapacity = (kSmemBytes - kMergeTailBytes) / 32 * 4;
  static constexpr int kMergeWOffset = 0;
  static constexpr int kMergeLOffset = kMergeCapacity * 4;
  static constexpr int kMergeRowMOffset = kMergeLOffset + kMergeCapacity * 4;
  static constexpr int kMergeRowLOffset = kMergeRowMOffset + kMergeMaxRows * 4;
  static constexpr int kMergePartOffset = kMergeRowLOffset + kMergeMaxRows * 4;
  static_assert(kMergePartOffset + kMergePartBytes <= kSmemBytes, "merge scratch must fit");

  // Output accumulator tiles (8 columns each) per warp, MMA k-steps of Q K^T over head_dim, and
  // of P V over the warp's output columns (k16 steps of 16 columns).
  static constexpr int kDimTiles = kVCols / 8;
  static constexpr int kDimSteps = HeadDim / 16;
  static constexpr int kVSteps = kVCols / 16;
};

}  // namespace leanattn::cuda
