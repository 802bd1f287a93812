# The version header: cmake/version.hpp.in configured from project(VERSION) into the build tree
# as <leanattn/version.hpp> (leanattn::version(), LEANATTN_VERSION_*), public through
# leanattn_core, so every target that links the library (the CLI, the Python module) sees it.
# pyproject.toml reads the same project() line: one version source.
set(LEANATTN_GENERATED_INCLUDE_DIR ${PROJECT_BINARY_DIR}/generated/include)
configure_file(${PROJECT_SOURCE_DIR}/cmake/version.hpp.in
               ${LEANATTN_GENERATED_INCLUDE_DIR}/leanattn/version.hpp @ONLY)
target_include_directories(leanattn_core PUBLIC
                           $<BUILD_INTERFACE:${LEANATTN_GENERATED_INCLUDE_DIR}>)
