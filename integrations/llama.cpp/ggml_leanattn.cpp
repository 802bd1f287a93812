// libggml-leanattn.so: a ggml backend that an unmodified llama.cpp loads (GGML_BACKEND_PATH, or
// ggml_backend_load()), computing GGML_OP_FLASH_ATTN_EXT with leanattn's CPU engine. It is an
// ACCEL device, as ggml-blas is: its buffer type is the CPU backend's host buffer type, so the
// scheduler moves a node onto it wherever supports_op() takes it, and every node it declines
// stays on ggml's CPU backend. docs/llama-cpp.md has the commands, what is taken and declined,
// and the version policy.
//   LEANATTN_GGML=0        not loaded (score 0): stock llama.cpp, for A/B runs in one binary
//   LEANATTN_GGML_STATS=1  when a backend is freed, one line on stderr: the FLASH_ATTN_EXT nodes
//                          it computed and the KV cache it moved to huge pages (the placement
//                          test reads it)
//   LEANATTN_GGML_HUGE_PAGES=0  leaves the KV cache's pages as they are (kv_cache_pages.hpp)
//   LEANATTN_GGML_ANY_VERSION=1  loads into a ggml version not tested with the one it was built
//                          against (said in the log)
// Besides ggml's two entry points it exports, for callers that dlopen it first (the Python
// helper leanattn.integrations.llama_cpp), leanattn_ggml_check() (the version policy's decision
// for the process's ggml, without logging), leanattn_ggml_built_version(),
// leanattn_ggml_running_version() and leanattn_ggml_nodes_computed() (FLASH_ATTN_EXT nodes
// computed in this process so far, every backend instance together).
// Which ggml it loads into (ggml_version_policy.hpp): its build's ggml version, or one tested
// together with it; others are refused (score 0, one log line naming both versions and the
// rebuild command), as is any ggml that numbers the ops and types it reads differently.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "flash_attn_node.hpp"
#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-impl.h"
#include "ggml_version_policy.hpp"
#include "kv_cache_pages.hpp"
#ifdef LEANATTN_GGML_OPENMP
#include <omp.h>
#endif

#include "ggml-version.h"  // GGML_VERSION, GGML_COMMIT of the build this is compiled against
#include "ggml.h"

namespace {

using leanattn::llama_cpp::FlashAttnRunner;
using leanattn::llama_cpp::KvCachePages;

const char* const kName = "LEANATTN";

// Every instance's nodes together (leanattn_ggml_nodes_computed()).
std::atomic<long long> g_computed{0};

bool switched_off() {
  const char* env = std::getenv("LEANATTN_GGML");
  return env != nullptr && (std::strcmp(env, "0") == 0 || std::strcmp(env, "off") == 0);
}

// Says once per distinct message what the device takes and declines (the scheduler asks for
// every node of every graph it splits).
void log_once(const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> said;
  const std::lock_guard lock(mutex);
  if (said.insert(message).second) GGML_LOG_INFO("leanattn: %s\n", message.c_str());
}

struct BackendContext {
  FlashAttnRunner runner;
  KvCachePages pages;
  long long computed = 0;  // FLASH_ATTN_EXT nodes
  double seconds = 0.0;    // in FlashAttnRunner::run
  ~BackendContext() {
    const char* stats = std::getenv("LEANATTN_GGML_STATS");
    if (stats != nullptr && std::strcmp(stats, "1") == 0) {
      std::fprintf(stderr,
                   "leanattn: computed %lld FLASH_ATTN_EXT nodes in %.3f ms; %zu MiB of KV cache "
                   "moved to huge pages\n",
                   computed, seconds * 1e3, pages.moved_bytes() >> 20);
    }
  }
};

const char* backend_name(ggml_backend_t) {
  return kName;
}

void backend_free(ggml_backend_t backend) {
  delete static_cast<BackendContext*>(backend->context);
  delete backend;
}

ggml_status graph_compute(ggml_backend_t backend, ggml_cgraph* graph) {
  auto* ctx = static_cast<BackendContext*>(backend->context);
  for (int i = 0; i < graph->n_nodes; ++i) {
    ggml_tensor* node = graph->nodes[i];
    if ((node->flags & GGML_TENSOR_FLAG_COMPUTE) == 0) continue;
    switch (node->op) {
      case GGML_OP_FLASH_ATTN_EXT:
        try {
          if (const std::string moved = ctx->pages.advise(node); !moved.empty()) {
            GGML_LOG_INFO("leanattn: KV cache %s\n", moved.c_str());
          }
          const auto start = std::chrono::steady_clock::now();
          ctx->runner.run(node);
          ctx->seconds +=
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          ++ctx->computed;
          g_computed.fetch_add(1, std::memory_order_relaxed);
        } catch (const std::exception& e) {
          GGML_LOG_ERROR("leanattn: FLASH_ATTN_EXT %s failed: %s\n", node->name, e.what());
          return GGML_STATUS_FAILED;
        }
        break;
      case GGML_OP_NONE:
      case GGML_OP_RESHAPE:
      case GGML_OP_VIEW:
      case GGML_OP_PERMUTE:
      case GGML_OP_TRANSPOSE:
        break;
      default:
        GGML_LOG_ERROR("leanattn: handed op %s, which it never takes\n", ggml_op_desc(node));
        return GGML_STATUS_FAILED;
    }
  }
  return GGML_STATUS_SUCCESS;
}

ggml_guid_t backend_guid() {
  static ggml_guid guid = {0x6c, 0x65, 0x61, 0x6e, 0x61, 0x74, 0x74, 0x6e,
                           0x2d, 0x67, 0x67, 0x6d, 0x6c, 0x2d, 0x30, 0x31};
  return &guid;
}

const ggml_backend_i kBackendInterface = {
    /* .get_name            = */ backend_name,
    /* .free                = */ backend_free,
    /* .set_tensor_async    = */ nullptr,
    /* .get_tensor_async    = */ nullptr,
    /* .set_tensor_2d_async = */ nullptr,
    /* .get_tensor_2d_async = */ nullptr,
    /* .cpy_tensor_async    = */ nullptr,
    /* .synchronize         = */ nullptr,
    /* .graph_plan_create   = */ nullptr,
    /* .graph_plan_free     = */ nullptr,
    /* .graph_plan_update   = */ nullptr,
    /* .graph_plan_compute  = */ nullptr,
    /* .graph_compute       = */ graph_compute,
    /* .event_record        = */ nullptr,
    /* .event_wait          = */ nullptr,
    /* .graph_optimize      = */ nullptr,
};

#ifdef LEANATTN_GGML_OPENMP
// The engine's threads are an OpenMP team started from the calling thread, as ggml's CPU backend
// starts its own: libgomp hands the region the threads that just ran ggml's nodes (and spin
// while waiting for more), so the two never compete for cores.
void openmp_parallel(void*, std::int32_t threads, leanattn::cpu::ParallelFor::Job job, void* jc) {
#pragma omp parallel num_threads(threads)
  {
    const int team = omp_get_num_threads();
    for (int t = omp_get_thread_num(); t < threads; t += team) job(jc, t);
  }
}
const leanattn::cpu::ParallelFor kThreads{openmp_parallel, nullptr};
#else
const leanattn::cpu::ParallelFor kThreads{};  // the engine's own pool
#endif

void set_n_threads(ggml_backend_t backend, int n_threads) {
  static_cast<BackendContext*>(backend->context)->runner.set_threads(n_threads, kThreads);
}

// The device.

const char* device_name(ggml_backend_dev_t) {
  return kName;
}

const char* device_description(ggml_backend_dev_t) {
  return "leanattn: LeanAttention decode attention on the CPU";
}

void device_memory(ggml_backend_dev_t, size_t* free, size_t* total) {
  *free = 0;
  *total = 0;
}

enum ggml_backend_dev_type device_type(ggml_backend_dev_t) {
  return GGML_BACKEND_DEVICE_TYPE_ACCEL;
}

// ggml 0.15 (llama-cpp-python 0.3.30) has no mmap_support: the struct's members by name.
template <class Caps>
void set_caps(Caps& caps) {
  caps.async = false;
  caps.host_buffer = false;
  caps.buffer_from_host_ptr = true;
  caps.events = false;
  if constexpr (requires { caps.mmap_support; }) caps.mmap_support = true;
}

void device_props(ggml_backend_dev_t dev, ggml_backend_dev_props* props) {
  props->name = device_name(dev);
  props->description = device_description(dev);
  props->type = device_type(dev);
  props->device_id = nullptr;
  device_memory(dev, &props->memory_free, &props->memory_total);
  set_caps(props->caps);
}

ggml_backend_t device_init(ggml_backend_dev_t dev, const char*);

ggml_backend_buffer_type_t device_buffer_type(ggml_backend_dev_t) {
  return ggml_backend_cpu_buffer_type();
}

ggml_backend_buffer_t device_buffer_from_host_ptr(ggml_backend_dev_t, void* ptr, size_t size,
                                                  size_t) {
  return ggml_backend_cpu_buffer_from_ptr(ptr, size);
}

bool device_supports_op(ggml_backend_dev_t, const ggml_tensor* op) {
  switch (op->op) {
    case GGML_OP_NONE:
    case GGML_OP_RESHAPE:
    case GGML_OP_VIEW:
    case GGML_OP_PERMUTE:
    case GGML_OP_TRANSPOSE:
      return true;
    case GGML_OP_FLASH_ATTN_EXT: {
      const std::string why = leanattn::llama_cpp::why_not(op);
      log_once(why.empty() ? "takes FLASH_ATTN_EXT nodes like " + std::string(op->name)
                           : "declines FLASH_ATTN_EXT (stays on ggml): " + why);
      return why.empty();
    }
    default:
      return false;
  }
}

bool device_supports_buft(ggml_backend_dev_t, ggml_backend_buffer_type_t buft) {
  return ggml_backend_buft_is_host(buft);
}

const ggml_backend_device_i kDeviceInterface = {
    /* .get_name             = */ device_name,
    /* .get_description      = */ device_description,
    /* .get_memory           = */ device_memory,
    /* .get_type             = */ device_type,
    /* .get_props            = */ device_props,
    /* .init_backend         = */ device_init,
    /* .get_buffer_type      = */ device_buffer_type,
    /* .get_host_buffer_type = */ nullptr,
    /* .buffer_from_host_ptr = */ device_buffer_from_host_ptr,
    /* .supports_op          = */ device_supports_op,
    /* .supports_buft        = */ device_supports_buft,
    /* .offload_op           = */ nullptr,
    /* .event_new            = */ nullptr,
    /* .event_free           = */ nullptr,
    /* .event_synchronize    = */ nullptr,
};

// The registry.

const char* reg_name(ggml_backend_reg_t) {
  return kName;
}

size_t reg_device_count(ggml_backend_reg_t) {
  return 1;
}

ggml_backend_dev_t reg_device(ggml_backend_reg_t reg, size_t index) {
  GGML_ASSERT(index == 0);
  static ggml_backend_device device = {kDeviceInterface, reg, nullptr};
  return &device;
}

void* reg_proc_address(ggml_backend_reg_t, const char* name) {
  if (std::strcmp(name, "ggml_backend_set_n_threads") == 0) {
    return reinterpret_cast<void*>(set_n_threads);
  }
  return nullptr;
}

const ggml_backend_reg_i kRegInterface = {
    /* .get_name         = */ reg_name,
    /* .get_device_count = */ reg_device_count,
    /* .get_device       = */ reg_device,
    /* .get_proc_address = */ reg_proc_address,
};

ggml_backend_reg_t leanattn_reg() {
  static ggml_backend_reg reg = {GGML_BACKEND_API_VERSION, kRegInterface, nullptr};
  return &reg;
}

ggml_backend_t device_init(ggml_backend_dev_t, const char*) {
  return new ggml_backend{backend_guid(), kBackendInterface,
                          ggml_backend_reg_dev_get(leanattn_reg(), 0), new BackendContext};
}

// "" when the process's ggml names the ops and types the backend reads as its build did (the
// enums' order: a node's op and types are compared with the build's numbers).
std::string layout_error() {
  const std::pair<ggml_op, const char*> ops[] = {
      {GGML_OP_NONE, "NONE"},           {GGML_OP_RESHAPE, "RESHAPE"},
      {GGML_OP_VIEW, "VIEW"},           {GGML_OP_PERMUTE, "PERMUTE"},
      {GGML_OP_TRANSPOSE, "TRANSPOSE"}, {GGML_OP_FLASH_ATTN_EXT, "FLASH_ATTN_EXT"}};
  for (const auto& [op, name] : ops) {
    if (std::strcmp(ggml_op_name(op), name) != 0) {
      return "op " + std::to_string(op) + " is " + ggml_op_name(op) + " here, " + name +
             " in its build";
    }
  }
  const std::pair<ggml_type, const char*> types[] = {{GGML_TYPE_F32, "f32"},
                                                     {GGML_TYPE_F16, "f16"},
                                                     {GGML_TYPE_BF16, "bf16"},
                                                     {GGML_TYPE_Q8_0, "q8_0"},
                                                     {GGML_TYPE_Q4_0, "q4_0"}};
  for (const auto& [type, name] : types) {
    if (std::strcmp(ggml_type_name(type), name) != 0) {
      return "type " + std::to_string(type) + " is " + ggml_type_name(type) + " here, " + name +
             " in its build";
    }
  }
  return "";
}

bool any_version() {
  const char* env = std::getenv("LEANATTN_GGML_ANY_VERSION");
  return env != nullptr && std::strcmp(env, "1") == 0;
}

leanattn::llama_cpp::LoadDecision load_decision() {
  return leanattn::llama_cpp::decide_load(
      {GGML_VERSION, GGML_COMMIT}, {ggml_version(), ggml_commit()}, any_version(), layout_error());
}

// 0 (not loaded) when switched off or refused by the version policy; 1 otherwise.
int leanattn_score() {
  if (switched_off()) {
    GGML_LOG_INFO("leanattn: off (LEANATTN_GGML=%s): not loaded\n", std::getenv("LEANATTN_GGML"));
    return 0;
  }
  const leanattn::llama_cpp::LoadDecision decision = load_decision();
  if (!decision.load) {
    GGML_LOG_ERROR("leanattn: %s\n", decision.message.c_str());
  } else if (!decision.message.empty()) {
    GGML_LOG_INFO("leanattn: %s\n", decision.message.c_str());
  }
  return decision.load ? 1 : 0;
}

}  // namespace

#define LEANATTN_GGML_EXPORT extern "C" __attribute__((visibility("default")))

// 1 when the version policy loads the backend into the process's ggml, 0 when it refuses; the
// decision's log line (without "leanattn: "; "" when there is nothing to say) is copied into
// `message` (`size` bytes with the terminating 0, cut if longer). Logs nothing; LEANATTN_GGML=0
// is not looked at (ggml's loader applies it).
LEANATTN_GGML_EXPORT int leanattn_ggml_check(char* message, size_t size) {
  try {
    const leanattn::llama_cpp::LoadDecision decision = load_decision();
    if (message != nullptr && size > 0) {
      std::snprintf(message, size, "%s", decision.message.c_str());
    }
    return decision.load ? 1 : 0;
  } catch (...) {
    if (message != nullptr && size > 0) std::snprintf(message, size, "%s", "internal error");
    return 0;
  }
}

// The ggml version the backend was built against, and the one it runs in (ggml_version() as the
// backend resolves it).
LEANATTN_GGML_EXPORT const char* leanattn_ggml_built_version() {
  return GGML_VERSION;
}
LEANATTN_GGML_EXPORT const char* leanattn_ggml_running_version() {
  return ggml_version();
}

LEANATTN_GGML_EXPORT long long leanattn_ggml_nodes_computed() {
  return g_computed.load(std::memory_order_relaxed);
}

GGML_BACKEND_DL_IMPL(leanattn_reg)
GGML_BACKEND_DL_SCORE_IMPL(leanattn_score)
