// The rules of array arguments that need no template (array_rules.hpp): type names and element
// types read from DLPack descriptors.
#include "array_rules.hpp"

#include <limits>
#include <optional>

namespace leanattn::python {

using nb::dlpack::dtype_code;

std::string device_text(const Device& d) {
  const std::string name = d.type == nb::device::cpu::value ? "cpu"
                           : d.type == nb::device::cuda::value
                               ? "cuda"
                               : "device type " + std::to_string(d.type);
  return name + ":" + std::to_string(d.id);
}

std::int32_t to_i32(std::size_t value, const char* argument, const std::string& what) {
  if (value > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    value_error(argument, what + " = " + std::to_string(value) + " is too large");
  }
  return static_cast<std::int32_t>(value);
}

std::string dtype_text(const nb::dlpack::dtype& dtype) {
  std::string base;
  switch (static_cast<dtype_code>(dtype.code)) {
    case dtype_code::Int:
      base = "int";
      break;
    case dtype_code::UInt:
      base = "uint";
      break;
    case dtype_code::Float:
      base = "float";
      break;
    case dtype_code::Bfloat:
      base = "bfloat";
      break;
    case dtype_code::Complex:
      base = "complex";
      break;
    case dtype_code::Bool:
      return "bool";
    default:
      base = "dlpack type code " + std::to_string(dtype.code) + " of ";
      break;
  }
  std::string text = base + std::to_string(dtype.bits);
  if (dtype.lanes != 1) text += "x" + std::to_string(dtype.lanes);
  return text;
}

DType element_type(const nb::dlpack::dtype& dtype, std::string_view hint, const char* argument) {
  const auto code = static_cast<dtype_code>(dtype.code);
  const bool scalar = dtype.lanes == 1;
  std::optional<DType> found;
  if (scalar && code == dtype_code::Float && dtype.bits == 32) found = DType::f32;
  if (scalar && code == dtype_code::Float && dtype.bits == 16) found = DType::f16;
  if (scalar && code == dtype_code::Bfloat && dtype.bits == 16) found = DType::bf16;
  if (scalar && code == dtype_code::UInt && dtype.bits == 16 && hint == "bf16") found = DType::bf16;
  // 8-bit caches: int8 as such; fp8 as the uint8 view the Python layer makes, with its hint.
  if (scalar && code == dtype_code::Int && dtype.bits == 8) found = DType::int8;
  if (scalar && code == dtype_code::UInt && dtype.bits == 8 &&
      (hint == "fp8_e4m3" || hint == "fp8_e5m2")) {
    found = hint == "fp8_e4m3" ? DType::fp8_e4m3 : DType::fp8_e5m2;
  }
  // ggml's block formats: the cache's bytes (uint8), with the hint "q8_0" or "q4_0".
  if (scalar && code == dtype_code::UInt && dtype.bits == 8 && (hint == "q8_0" || hint == "q4_0")) {
    found = hint == "q8_0" ? DType::q8_0 : DType::q4_0;
  }
  if (!found || (!hint.empty() && dtype_name(*found) != hint)) {
    type_error(argument,
               "dtype must be float32, float16 or bfloat16, or for a KV cache int8, "
               "float8_e4m3fn or float8_e5m2 (uint8 with kv_dtype=), or uint8 ggml blocks "
               "(kv_dtype='q8_0' or 'q4_0') (got " +
                   dtype_text(dtype) + ")");
  }
  return *found;
}

}  // namespace leanattn::python
