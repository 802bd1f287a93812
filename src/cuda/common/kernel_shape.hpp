// KernelShape<HeadDim, WarpsM, KvBits>: every compile-time size of one decode-kernel configuration
// (warp grid, tokens per pipeline stage, stages, shared-memory layout), as constexpr host/device
// code. Read by the kernel (src/cuda/kernel), by the host registry (shared-memory bytes for the
// launch and the occupancy query) and by the CPU tests (tests/cuda), which check that the layout
// fits and that the kernel's blocking gives the right answer when emulated on the CPU.
#pragma once

#include <cstdint>

namespace leanattn::cuda {

// A CTA has 4 warps in a WarpsM x WarpsN grid. The GQA group's query rows are packed into
// 16-row MMA tiles, one per warp row (WarpsM tiles = kRows rows per pass); the warp columns share
// out the tokens of each stage (WarpsN 16-token steps side by side). So WarpsM = 1 suits groups
// of up to 16 rows (MHA, most GQA), WarpsM = 4 groups of up to 64 (MQA-like); larger groups take
// several passes over the segment's tokens.
//
// KvBits 8 (an 8-bit cache): the pipeline stages hold K and V as loaded, 8 bits (half the bytes of
// a 16-bit stage), with the tokens' K and V scales; before its block is computed, the CTA converts
// a stage into one 16-bit K tile and one 16-bit V tile (collective/kv8_convert.cuh) that the warps
// read exactly as they read a 16-bit stage.
template <int HeadDim, int WarpsM, int KvBits = 16>
struct KernelShape {
  static_assert(HeadDim == 64 || HeadDim == 128 || HeadDim == 256, "head_dim 64, 128 or 256");
  static_assert(WarpsM == 1 || WarpsM == 2 || WarpsM == 4, "4 warps in a WarpsM x WarpsN grid");
  static_assert(KvBits == 16 || KvBits == 8, "16-bit or 8-bit K and V");

  static constexpr int kHeadDim = HeadDim;
  static constexpr int kKvBits = KvBits;
  static constexpr bool kKv8 = KvBits == 8;
  static constexpr int kThreads = 128;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kWarpsM = WarpsM;
  static constexpr int kWarpsN = kWarps / WarpsM;
  static constexpr int kRows = 16 * WarpsM;  // query rows per pass over the tokens
  // Resident CTAs per SM the registers are budgeted for (__launch_bounds__): two CTAs of 128
  // threads leave each thread the full 255 registers.
  static constexpr int kMinBlocksPerSm = 2;
  static constexpr int kStepTokens = 16;  // tokens per MMA step (one k16 of P.V)

  // 16-byte chunks per 16-bit K/V/Q row, and 16-bit elements per chunk.
  static constexpr int kChunkElems = 8;
  static constexpr int kChunksPerRow = HeadDim / kChunkElems;
  // The same for K and V rows as loaded (8-bit: 16 elements per chunk).
  static constexpr int kLoadChunkElems = 16 / (KvBits / 8);
  static constexpr int kLoadChunksPerRow = HeadDim / kLoadChunkElems;

  // Tokens per pipeline stage: about 32 KiB of K and V (16-bit), and at least one step per warp
  // column. head_dim 64: 128 tokens; 128: 64; 256: 64 (WarpsN 4: 64 KiB) or 32.
  static constexpr int kRoundTokens = kStepTokens * kWarpsN;  // one step of every warp column
  static constexpr int kBlockN = 8192 / HeadDim > kRoundTokens ? 8192 / HeadDim : kRoundTokens;
  static constexpr int kStepsPerWarp = kBlockN / kRoundTokens;
  static_assert(kBlockN % kRoundTokens == 0, "stage must split evenly over warps");

  static constexpr int kStageTileBytes = kBlockN * HeadDim * 2;  // K (or V) of one stage, 16-bit
  static constexpr int kLoadTileBytes = kBlockN * HeadDim * (KvBits / 8);  // ... as loaded
  // Three stages everywhere: with cp.async.wait_group(kStages - 2), two stages would leave nothing
  // in flight between one stage landing and the next being issued.
  static constexpr int kStages = 3;

  // 16-byte loads per thread for one K (or V) stage tile, and for the Q tile.
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
  static_assert(!kQOverlaysStage || kQBytes <= kStageTileBytes, "Q must fit in one stage tile");

  // Shared memory, in bytes from the dynamic base (128-byte aligned pieces):
  //   k:  [kComputeTiles][kBlockN][HeadDim] 16-bit, swizzled: the tiles the warps read (16-bit
  //       caches: the kStages pipeline stages themselves; 8-bit: one converted tile)
  //   v:  same
  //   q:  [kRows][HeadDim] 16-bit, swizzled: V's last tile (kQOverlaysStage), else before k
  //   8-bit only: k8, v8 [kStages][kBlockN][HeadDim] bytes (the stages as loaded, row-major),
  //       then scales [kStages][2][kBlockN] float (K's, then V's, of each stage's tokens)
  //   row rules: [kRows] RowRule, last
  // After a pass over the tokens the k/v region is reused by the epilogue:
  //   o:  [kWarpsN][kRows][kScratchRowFloats] float (per-warp-column partial outputs)
  //   m, l: [kWarpsN][kRows] float
  // and after a split piece by the last arriver's slot merge (epilogue.cuh, from offset 0).
  static constexpr int kComputeTiles = kKv8 ? 1 : kStages;
  static constexpr int kKOffset = kQOverlaysStage ? 0 : kQBytes;
  static constexpr int kVOffset = kKOffset + kComputeTiles * kStageTileBytes;
  static constexpr int kQOffset =
      kQOverlaysStage ? kVOffset + (kComputeTiles - 1) * kStageTileBytes : 0;
  // Where the copies land: the stages as loaded (16-bit: the k and v tiles above).
  static constexpr int kLoadKOffset = kKv8 ? kVOffset + kStageTileBytes : kKOffset;
  static constexpr int kLoadVOffset = kKv8 ? kLoadKOffset + kStages * kLoadTileBytes : kVOffset;
  static constexpr int kScalesOffset = kLoadVOffset + kStages * kLoadTileBytes;
  static constexpr int kScalesBytes = kKv8 ? kStages * 2 * kBlockN * 4 : 0;
  // The pass's row rules (row_rules.hpp: RowRule, 16 bytes per row: the keys the row sees, its
  // query position and ALiBi slope), written once per pass and read by every step: in shared
  // memory rather than registers, which head_dim 256 does not have to spare.
  static constexpr int kRowRuleBytes = 16;
  static constexpr int kRowRulesOffset = kScalesOffset + kScalesBytes;
  static constexpr int kSmemBytes = kRowRulesOffset + kRows * kRowRuleBytes;
  static_assert(kRows <= kThreads, "one thread per row writes the row rules");

  static constexpr int kScratchRowFloats = HeadDim + 4;  // padded against bank conflicts
  static constexpr int kScratchOOffset = kKOffset;
  static constexpr int kScratchMOffset = kScratchOOffset + kWarpsN * kRows * kScratchRowFloats * 4;
  static constexpr int kScratchLOffset = kScratchMOffset + kWarpsN * kRows * 4;
  static constexpr int kScratchEnd = kScratchLOffset + kWarpsN * kRows * 4;
  static_assert(kScratchEnd <= kSmemBytes, "epilogue scratch must fit in the K/V stages");
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

  // Output accumulator tiles (8 columns each) per warp, and MMA k-steps over head_dim.
  static constexpr int kDimTiles = HeadDim / 8;
  static constexpr int kDimSteps = HeadDim / 16;
};

}  // namespace leanattn::cuda
