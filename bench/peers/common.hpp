// Shared pieces of the C++ peer harnesses (ggml_decode.cpp, onednn_decode.cpp), compiled by
// run_peers.sh at benchmark time: command line, deterministic N(0, 1) data, f16/bf16 rounding,
// rotated KV copies (so small caches are read cold), timing statistics, the fp64 reference and
// the one-line JSON result that run_peers.sh collects (combine.py turns it into a CSV row).
// K and V may differ in width (--head-dim-v), and V may be the first head_dim_v values of K's
// rows (--v-in-k: absorbed MLA's latent cache, no V cache of its own).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>

namespace peers {

// ---- command line -------------------------------------------------------------------------------

struct Args {
  std::string label = "custom";
  int q_heads = 32, kv_heads = 8, head_dim = 128;
  int head_dim_v = 0;   // V and output width; 0 = head_dim
  bool v_in_k = false;  // V = the first dv() values of K's rows (no V cache)
  std::vector<int> seq_lens = {4096};
  int threads = 2;
  int repeat = 20;
  int warmup = 3;
  std::int64_t rotate_mib = 512;  // rotate KV copies until at least this much is cycled

  int batch() const { return static_cast<int>(seq_lens.size()); }
  int group() const { return q_heads / kv_heads; }
  int dv() const { return head_dim_v ? head_dim_v : head_dim; }
  int longest() const { return *std::max_element(seq_lens.begin(), seq_lens.end()); }
  std::int64_t total_tokens() const {
    std::int64_t t = 0;
    for (int n : seq_lens) t += n;
    return t;
  }
  // Useful K+V bytes of 16-bit elements, as leanattn counts them (sum of lengths; K only when
  // V lies in K's rows, as DecodeProblem::kv_bytes(shared_kv)).
  std::int64_t kv_bytes() const {
    return total_tokens() * kv_heads * (head_dim + (v_in_k ? 0 : dv())) * 2;
  }
  bool ragged() const {
    return std::any_of(seq_lens.begin(), seq_lens.end(), [&](int n) { return n != seq_lens[0]; });
  }
  std::string lens_text() const {
    std::string s;
    for (std::size_t i = 0; i < seq_lens.size(); ++i)
      s += (i ? ";" : "") + std::to_string(seq_lens[i]);
    return s;
  }
};

[[noreturn]] inline void usage_error(const char* prog, const std::string& what) {
  std::fprintf(stderr,
               "%s: %s\nusage: %s --q-heads H --kv-heads K --head-dim D [--head-dim-v DV] "
               "[--v-in-k] --seq-lens N[,N...] [--threads T] [--repeat R] [--warmup W] "
               "[--rotate-mib M] [--label L]\n",
               prog, what.c_str(), prog);
  std::exit(2);
}

inline Args parse_args(int argc, char** argv) {
  Args a;
  auto num = [&](const char* s) {
    char* end = nullptr;
    const long long v = std::strtoll(s, &end, 10);
    if (!end || *end || v < 0) usage_error(argv[0], std::string("not a count: '") + s + "'");
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--v-in-k") {
      a.v_in_k = true;
      continue;
    }
    if (i + 1 >= argc) usage_error(argv[0], "missing value after " + f);
    const char* v = argv[++i];
    if (f == "--label")
      a.label = v;
    else if (f == "--q-heads")
      a.q_heads = static_cast<int>(num(v));
    else if (f == "--kv-heads")
      a.kv_heads = static_cast<int>(num(v));
    else if (f == "--head-dim")
      a.head_dim = static_cast<int>(num(v));
    else if (f == "--head-dim-v")
      a.head_dim_v = static_cast<int>(num(v));
    else if (f == "--threads")
      a.threads = static_cast<int>(num(v));
    else if (f == "--repeat")
      a.repeat = static_cast<int>(num(v));
    else if (f == "--warmup")
      a.warmup = static_cast<int>(num(v));
    else if (f == "--rotate-mib")
      a.rotate_mib = num(v);
    else if (f == "--seq-lens") {
      a.seq_lens.clear();
      std::stringstream ss(v);
      for (std::string tok; std::getline(ss, tok, ',');)
        a.seq_lens.push_back(static_cast<int>(num(tok.c_str())));
    } else
      usage_error(argv[0], "unknown flag " + f);
  }
  if (a.kv_heads < 1 || a.q_heads < a.kv_heads || a.q_heads % a.kv_heads)
    usage_error(argv[0], "--q-heads must be a positive multiple of --kv-heads");
  if (a.head_dim < 1 || a.seq_lens.empty() || a.longest() < 1 || a.threads < 1 || a.repeat < 1)
    usage_error(argv[0], "--head-dim, --seq-lens, --threads and --repeat must be positive");
  if (a.v_in_k && a.dv() > a.head_dim)
    usage_error(argv[0], "--v-in-k: --head-dim-v must not exceed --head-dim");
  return a;
}

// ---- data ---------------------------------------------------------------------------------------

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Sum of three uniforms scaled to unit variance: close enough to N(0, 1), and fast.
inline float normal_at(std::uint64_t seed, std::uint64_t i) {
  const std::uint64_t h = splitmix64(seed * 0x9e3779b97f4a7c15ull + i);
  const float u0 = static_cast<float>(h & 0x1fffff) / 2097152.0f;
  const float u1 = static_cast<float>((h >> 21) & 0x1fffff) / 2097152.0f;
  const float u2 = static_cast<float>((h >> 42) & 0x1fffff) / 2097152.0f;
  return (u0 + u1 + u2 - 1.5f) * 2.0f;
}

inline std::uint16_t f32_to_f16(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
inline float f16_to_f32(std::uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}
inline std::uint16_t f32_to_bf16(float f) {  // round to nearest even
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<std::uint16_t>(u >> 16);
}
inline float bf16_to_f32(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Fills `count` 16-bit values (f16, or bf16 when bf16 is true) with N(0, 1) numbers.
inline void fill_16bit(std::uint16_t* dst, std::int64_t count, std::uint64_t seed, bool bf16) {
  for (std::int64_t i = 0; i < count; ++i) {
    const float f = normal_at(seed, static_cast<std::uint64_t>(i));
    dst[i] = bf16 ? f32_to_bf16(f) : f32_to_f16(f);
  }
}

// ---- huge pages ---------------------------------------------------------------------------------

// An allocator for the KV copies: 2 MiB-aligned blocks advised as transparent huge pages, as
// leanattn's own buffers are (tools/harness/large_buffer.cpp), so that no implementation pays TLB
// misses the others do not.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(std::size_t n) {
    const std::size_t bytes =
        (std::max<std::size_t>(n * sizeof(T), 1) + kHugePage - 1) / kHugePage * kHugePage;
    void* p = std::aligned_alloc(kHugePage, bytes);
    if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) {
    std::free(p);
  }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};
template <typename T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

// Number of KV copies to rotate through so that at least rotate_mib MiB is cycled (1..64),
// the same rule as leanattn's benchmark.
inline int kv_copies(const Args& a, std::int64_t buffer_bytes) {
  const std::int64_t want = a.rotate_mib << 20;
  return static_cast<int>(
      std::clamp<std::int64_t>((want + buffer_bytes - 1) / buffer_bytes, 1, 64));
}

// ---- timing -------------------------------------------------------------------------------------

struct Timing {
  double median_us = 0, best_us = 0;
};

// Runs body(copy) warmup + repeat times, copy = run index modulo copies; times the repeats.
inline Timing time_runs(const Args& a, int copies, const std::function<void(int)>& body) {
  std::vector<double> us;
  int next = 0;
  for (int r = -a.warmup; r < a.repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    body(next++ % copies);
    const double dt =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (r >= 0) us.push_back(dt);
  }
  std::sort(us.begin(), us.end());
  const std::size_t n = us.size();
  return {n % 2 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]), us.front()};
}

// ---- fp64 reference -----------------------------------------------------------------------------

// A 16-bit K or V cache as the peer saw it: element (b, t, kvh, i) at
// base[start[b] + t * st + kvh * sh + i], f16 or bf16.
struct KvView {
  const std::uint16_t* base;
  std::vector<std::int64_t> start;  // per request
  std::int64_t st, sh;
  bool bf16;
};

// q: [batch, q_heads, head_dim] and got: [batch, q_heads, dv] floats (the query as given to the
// peer, the peer's output); v's rows are read for their first dv values (v may view K's rows).
// Returns {max |got - ref|, max |ref|} over every row, computed in fp64 on `threads`
// threads.
struct Check {
  double max_abs_err = 0, ref_max_abs = 0;
};

inline Check check_all_rows(const Args& a, const std::vector<float>& q, const KvView& k,
                            const KvView& v, const std::vector<float>& got) {
  static std::vector<float> lut_f16, lut_bf16;  // 16-bit pattern -> float
  if (lut_f16.empty()) {
    lut_f16.resize(65536);
    lut_bf16.resize(65536);
    for (int i = 0; i < 65536; ++i) {
      lut_f16[i] = f16_to_f32(static_cast<std::uint16_t>(i));
      lut_bf16[i] = bf16_to_f32(static_cast<std::uint16_t>(i));
    }
  }
  const float* kl = k.bf16 ? lut_bf16.data() : lut_f16.data();
  const float* vl = v.bf16 ? lut_bf16.data() : lut_f16.data();
  const int rows = a.batch() * a.q_heads, d = a.head_dim, dv = a.dv();
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<Check> part(static_cast<std::size_t>(a.threads));
  auto work = [&](int t) {
    std::vector<double> s, o(static_cast<std::size_t>(dv));
    for (int row = t; row < rows; row += a.threads) {
      const int b = row / a.q_heads, h = row % a.q_heads, kvh = h / a.group(), n = a.seq_lens[b];
      const float* qr = q.data() + static_cast<std::int64_t>(row) * d;
      s.assign(static_cast<std::size_t>(n), 0.0);
      double m = -INFINITY;
      for (int tok = 0; tok < n; ++tok) {
        const std::uint16_t* kr = k.base + k.start[b] + tok * k.st + kvh * k.sh;
        double acc = 0;
        for (int i = 0; i < d; ++i) acc += static_cast<double>(qr[i]) * kl[kr[i]];
        s[tok] = acc * scale;
        m = std::max(m, s[tok]);
      }
      double sum = 0;
      std::fill(o.begin(), o.end(), 0.0);
      for (int tok = 0; tok < n; ++tok) {
        const std::uint16_t* vr = v.base + v.start[b] + tok * v.st + kvh * v.sh;
        const double p = std::exp(s[tok] - m);
        sum += p;
        for (int i = 0; i < dv; ++i) o[i] += p * vl[vr[i]];
      }
      Check& c = part[static_cast<std::size_t>(t)];
      for (int i = 0; i < dv; ++i) {
        const double ref = o[i] / sum, g = got[static_cast<std::size_t>(row) * dv + i];
        const double err = std::isfinite(g) ? std::abs(g - ref) : INFINITY;
        c.max_abs_err = std::max(c.max_abs_err, err);
        c.ref_max_abs = std::max(c.ref_max_abs, std::abs(ref));
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < a.threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();
  Check all;
  for (const Check& c : part) {
    all.max_abs_err = std::max(all.max_abs_err, c.max_abs_err);
    all.ref_max_abs = std::max(all.ref_max_abs, c.ref_max_abs);
  }
  return all;
}

// ---- result line --------------------------------------------------------------------------------

// One JSON object on stdout; run_peers.sh appends it to the run's peers.jsonl. kv_bytes is the
// problem's K+V at 16 bits per element whatever the peer's dtype, so that GB/s ranks like speed
// (K only with v_in_k).
inline void print_result(const Args& a, const std::string& impl, const std::string& dtype,
                         const Timing& t, int copies, const Check& c, const std::string& version,
                         const std::string& config) {
  std::printf(
      "{\"impl\": \"%s\", \"label\": \"%s\", \"q_heads\": %d, \"kv_heads\": %d, \"head_dim\": %d, "
      "\"head_dim_v\": %d, \"v_in_k\": %s, \"dtype\": \"%s\", \"seq_lens\": \"%s\", \"threads\": "
      "%d, \"repeat\": %d, "
      "\"median_us\": %.2f, \"best_us\": %.2f, \"kv_bytes\": %lld, \"kv_copies\": %d, "
      "\"max_abs_err\": %.3e, \"ref_max_abs\": %.3e, \"version\": \"%s\", \"config\": \"%s\"}\n",
      impl.c_str(), a.label.c_str(), a.q_heads, a.kv_heads, a.head_dim, a.dv(),
      a.v_in_k ? "true" : "false", dtype.c_str(), a.lens_text().c_str(), a.threads, a.repeat,
      t.median_us, t.best_us, static_cast<long long>(a.kv_bytes()), copies, c.max_abs_err,
      c.ref_max_abs, version.c_str(), config.c_str());
  std::fflush(stdout);
}

}  // namespace peers
