// Parsing of dtype names for the CLI and bindings.
#include "leanattn/dtype.hpp"

#include <string>

#include "leanattn/error.hpp"

namespace leanattn {

DType parse_dtype(std::string_view text, const char* argument) {
  if (text == "f32" || text == "float32") return DType::f32;
  if (text == "f16" || text == "float16") return DType::f16;
  if (text == "bf16" || text == "bfloat16") return DType::bf16;
  if (text == "fp8_e4m3" || text == "float8_e4m3fn") return DType::fp8_e4m3;
  if (text == "fp8_e5m2" || text == "float8_e5m2") return DType::fp8_e5m2;
  if (text == "int8") return DType::int8;
  if (text == "q8_0") return DType::q8_0;
  if (text == "q4_0") return DType::q4_0;
  throw Error(argument,
              "must be one of f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, q8_0, q4_0 (got '" +
                  std::string(text) + "')");
}

}  // namespace leanattn
