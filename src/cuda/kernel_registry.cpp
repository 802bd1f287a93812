// compiled_kernels(), find_kernel(), why_unsupported() (see kernel_registry.hpp), from the
// generated type list of the configuration table.
#include "cuda/kernel_registry.hpp"

#include <algorithm>

#include "cuda/kernel_table.hpp"

namespace leanattn::cuda {

const std::vector<KernelHandle>& compiled_kernels() {
  static const std::vector<KernelHandle> all = []<class... Configs>(ConfigList<Configs...>) {
    return std::vector<KernelHandle>{kernel_handle<Configs>()...};
  }(CompiledConfigs{});
  return all;
}

namespace {

// The width of K and V in memory the kernel for `p` reads.
std::int32_t kv_bits(const DecodeProblem& p) {
  return is_quantized(p.kv_dtype) ? 8 : 16;
}

// The most query tokens of one request: q_len, or the largest query_start_loc count (the rows
// a pair packs are that x the GQA group), and the first request that has them. Reads only the
// entries there are (the lookups may run before validate()).
struct LongestQueries {
  std::int64_t count = 0;
  std::int32_t request = 0;
};
LongestQueries longest_queries(const DecodeProblem& p) {
  if (!p.has_query_start_loc()) return {p.q_len, 0};
  const std::vector<std::int32_t>& loc = p.query_start_loc;
  LongestQueries most;
  for (std::size_t b = 0; b + 1 < loc.size(); ++b) {
    const std::int64_t n = std::int64_t{loc[b + 1]} - loc[b];
    if (n > most.count) most = {n, static_cast<std::int32_t>(b)};
  }
  return most;
}

bool matches(const KernelHandle& k, const DecodeProblem& p) {
  return k.dtype == p.q_dtype && k.kv_bits == kv_bits(p) && k.head_dim == p.head_dim &&
         k.head_dim_v == p.value_dim();
}

// The compiled widths for a dtype and cache width: "64, 128, 256" (K and V of one width), or
// with `unequal` the pairs "192 / 128, 576 / 512 (V from K's rows)".
std::string compiled_widths(DType dtype, std::int32_t bits, bool unequal) {
  std::vector<std::string> names;
  for (const KernelHandle& k : compiled_kernels()) {
    if (k.dtype != dtype || k.kv_bits != bits || (k.head_dim_v != k.head_dim) != unequal) continue;
    std::string n = std::to_string(k.head_dim);
    if (unequal) {
      n += " / " + std::to_string(k.head_dim_v) + (k.v_from_k ? " (V from K's rows)" : "");
    }
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

}  // namespace

std::string why_unsupported(const DecodeProblem& p, std::int32_t smem_per_block) {
  const LongestQueries most = longest_queries(p);
  if (p.has_query_start_loc() && most.count > kMaxCudaQLen) {
    return "query_start_loc: the CUDA engine takes at most " + std::to_string(kMaxCudaQLen) +
           " query tokens per request (request " + std::to_string(most.request) + " has " +
           std::to_string(most.count) +
           "; batches with longer prefill chunks run on the CPU engine)";
  }
  if (p.q_len > kMaxCudaQLen) {
    if (p.has_query_start_loc()) {
      return "q_len: the CUDA engine takes at most " + std::to_string(kMaxCudaQLen) + " (got " +
             std::to_string(p.q_len) +
             "); with query_start_loc it is the bound of the counts and of a workspace slot's "
             "rows: pass the longest count (" +
             std::to_string(most.count) + ")";
    }
    return "q_len: the CUDA engine takes at most " + std::to_string(kMaxCudaQLen) +
           " query tokens per request (got " + std::to_string(p.q_len) +
           "; longer prefill chunks run on the CPU engine)";
  }
  if (p.variant.bias) {
    return "bias: the CUDA engine does not add a per-key bias yet (the CPU engine does)";
  }
  if (p.value_dtype() != p.kv_dtype) {
    return "v_dtype: the CUDA engine reads K and V of one type (got K " +
           std::string(dtype_name(p.kv_dtype)) + ", V " + std::string(dtype_name(p.value_dtype())) +
           ")";
  }
  if (is_block_format(p.kv_dtype)) {  // docs/cuda-engine.md, "Quantized KV caches"
    return "kv_dtype: the CUDA engine does not read ggml's block formats (q8_0, q4_0) yet: its "
           "stages copy 16-byte aligned chunks, and their rows of 34- or 18-byte blocks are only "
           "2-byte aligned (the CPU engine reads them)";
  }
  if (is_quantized(p.kv_dtype)) {  // docs/cuda-engine.md, "Quantized KV caches"
    if (p.q_dtype != DType::f16 && p.q_dtype != DType::bf16) {
      return "q_dtype: must be f16 or bf16 with an 8-bit cache for the CUDA engine (got " +
             std::string(dtype_name(p.q_dtype)) + ")";
    }
  } else {
    if (p.q_dtype != p.kv_dtype) {
      return "q_dtype: must equal kv_dtype for the CUDA engine (got " +
             std::string(dtype_name(p.q_dtype)) + " and " + std::string(dtype_name(p.kv_dtype)) +
             ")";
    }
    if (p.kv_dtype != DType::f16 && p.kv_dtype != DType::bf16) {
      return "kv_dtype: must be f16 or bf16 for the CUDA engine (got " +
             std::string(dtype_name(p.kv_dtype)) + ")";
    }
  }
  std::int32_t least = 0;  // the least shared memory a matching configuration needs
  for (const KernelHandle& k : compiled_kernels()) {
    if (!matches(k, p)) continue;
    if (k.smem_bytes + kStaticSmemBytes <= smem_per_block) return "";
    const std::int32_t need = k.smem_bytes + kStaticSmemBytes;
    least = least == 0 || need < least ? need : least;
  }
  if (least > 0) {
    return "head_dim: " + std::to_string(p.head_dim) + " needs " + std::to_string(least) +
           " bytes of shared memory per CTA in the CUDA engine; this device allows " +
           std::to_string(smem_per_block);
  }
  const std::string caches = kv_bits(p) == 8 ? " with an 8-bit cache" : "";
  if (p.value_dim() != p.head_dim) {  // docs/validation.md, "The CUDA engine"
    return "head_dim_v: the CUDA engine reads K and V of different widths only as its compiled "
           "pairs for " +
           std::string(dtype_name(p.q_dtype)) + caches +
           " (K / V: " + compiled_widths(p.q_dtype, kv_bits(p), true) + ") (got head_dim " +
           std::to_string(p.head_dim) + ", head_dim_v " + std::to_string(p.value_dim()) +
           "); the CPU engine and the reference take any widths";
  }
  return "head_dim: must be one of the CUDA engine's compiled head dims for " +
         std::string(dtype_name(p.q_dtype)) + caches + " (" +
         compiled_widths(p.q_dtype, kv_bits(p), false) + ") (got " + std::to_string(p.head_dim) +
         ")";
}

const KernelHandle* find_kernel(const DecodeProblem& p, std::int32_t smem_per_block) {
  if (p.kv_heads < 1 || (!is_quantized(p.kv_dtype) && p.q_dtype != p.kv_dtype)) return nullptr;
  if (p.variant.bias || p.q_len > kMaxCudaQLen) return nullptr;  // why_unsupported says so
  if (p.value_dtype() != p.kv_dtype) return nullptr;
  // The longest request's query tokens x the GQA group, packed in the MMA rows (<= q_len x group,
  // the bound; counts past kMaxCudaQLen exceed q_len, which validate() refuses).
  const std::int64_t rows = longest_queries(p).count * p.group_size();
  const KernelHandle* fit = nullptr;      // fewest rows that hold the group
  const KernelHandle* largest = nullptr;  // most rows (several passes)
  for (const KernelHandle& k : compiled_kernels()) {
    if (!matches(k, p)) continue;
    if (k.smem_bytes + kStaticSmemBytes > smem_per_block) continue;
    if (k.rows >= rows && (fit == nullptr || k.rows < fit->rows)) fit = &k;
    if (largest == nullptr || k.rows > largest->rows) largest = &k;
  }
  return fit != nullptr ? fit : largest;
}

}  // namespace leanattn::cuda
