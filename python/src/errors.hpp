// Errors of the Python module: ValueError and TypeError that name the Python argument. The C++
// library throws leanattn::Error(argument, rule) with its own names (DecodeProblem fields,
// DecodeTensors strides); translate() maps them onto the parameters of the Python function that
// is running. Used by every bind_*.cpp and the readers of arrays.
#pragma once

#include <string>

#include "leanattn/error.hpp"

namespace leanattn::python {

// Which Python function's parameter names apply.
enum class Entry {
  decode,  // decode(q, k_cache, v_cache, seq_lens, block_table=...), reference()
  plan,    // plan(seq_lens, q_heads=, kv_heads=, head_dim=, ...)
};

// Raise ValueError / TypeError("argument: rule") in Python (nanobind translates the C++ exception).
[[noreturn]] void value_error(const std::string& argument, const std::string& rule);
[[noreturn]] void type_error(const std::string& argument, const std::string& rule);

// Raises ValueError for `error` with its argument renamed for `entry`, e.g. "capacity" ->
// "k_cache: capacity (k_cache.shape[1]) must be ...".
[[noreturn]] void raise_translated(const Error& error, Entry entry);

// Runs f(); a leanattn::Error it throws becomes the translated ValueError.
template <class F>
decltype(auto) translate_errors(Entry entry, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    raise_translated(e, entry);
  }
}

}  // namespace leanattn::python
