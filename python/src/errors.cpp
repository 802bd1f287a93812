// Name translation from the C++ library's argument names to the Python parameters (errors.hpp).
#include "errors.hpp"

#include <nanobind/nanobind.h>

#include <string_view>

namespace leanattn::python {

namespace nb = nanobind;

void value_error(const std::string& argument, const std::string& rule) {
  throw nb::value_error((argument + ": " + rule).c_str());
}

void type_error(const std::string& argument, const std::string& rule) {
  throw nb::type_error((argument + ": " + rule).c_str());
}

namespace {

struct Rename {
  std::string_view cpp;     // leanattn::Error::argument(), or a prefix ending in '.' or '_'
  std::string_view python;  // the Python parameter
  std::string_view what;    // what the C++ name is, in terms of the Python argument
};

// decode() and reference(): shapes come from the arrays.
constexpr Rename kDecodeNames[] = {
    {"q_heads", "q", "q_heads (q.shape[1])"},
    {"kv_heads", "k_cache", "kv_heads (k_cache.shape[2])"},
    {"head_dim", "q", "head_dim (q.shape[2])"},
    {"q_len", "q", "q_len"},
    {"capacity", "k_cache", "capacity (k_cache.shape[1])"},
    {"page_size", "k_cache", "page_size (k_cache.shape[1])"},
    {"num_pages", "k_cache", "num_pages (k_cache.shape[0])"},
    {"max_pages", "block_table", "max_pages (block_table.shape[1])"},
    {"block_table_stride", "block_table", "row stride"},
    {"q_stride_", "q", "stride"},
    {"k_strides.", "k_cache", "stride"},
    {"v_strides.", "v_cache", "stride"},
    {"out_stride_", "out", "stride"},
    {"lse_stride_", "lse_out", "stride"},
    {"lse", "lse_out", "lse"},
};

bool matches(std::string_view argument, std::string_view cpp) {
  const bool prefix = cpp.back() == '.' || cpp.back() == '_';
  return prefix ? argument.substr(0, cpp.size()) == cpp : argument == cpp;
}

}  // namespace

void raise_translated(const Error& error, Entry entry) {
  const std::string& argument = error.argument();
  if (entry == Entry::decode) {
    for (const Rename& r : kDecodeNames) {
      if (matches(argument, r.cpp)) {
        value_error(std::string(r.python), std::string(r.what) + " " + error.rule());
      }
    }
  }
  // Options (strategy, workers, tile, splits, order, ...), seq_lens, scale and plan keep their
  // names, and plan()'s shape arguments are named as in C++.
  value_error(argument, error.rule());
}

}  // namespace leanattn::python
