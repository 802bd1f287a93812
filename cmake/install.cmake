# `cmake --install`: what a C++ user links. Installs
#   include/leanattn/         the public headers, with the generated version.hpp (cuda_engine.hpp
#                             only from a CUDA build)
#   lib/libleanattn.a         one static library: the objects of leanattn_core, leanattn_planner,
#                             leanattn_reference, leanattn_cpu, leanattn_executors and, in a CUDA
#                             build, leanattn_cuda with its kernels (make_executor("cuda"))
#   lib/cmake/leanattn/       leanattnConfig.cmake, its version file and the exported target
#   bin/leanattn              the command-line tool, when built
# so that a consumer writes find_package(leanattn), target_link_libraries(app PRIVATE
# leanattn::leanattn) and #include <leanattn/leanattn.hpp> (tests/install_consumer, built against
# both builds by scripts/install-consumer-check.sh). Highway, and the CUDA runtime of a CUDA build
# (cudart_static), are linked, never compiled against: leanattnConfig.cmake finds them, and says
# which build it is (leanattn_WITH_CUDA).
# Components: `development` (headers, library, CMake files), `cli`. A wheel installs only the
# `python` component: the extension module (python/CMakeLists.txt) and the CLI (at the end).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(leanattn_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/leanattn)
find_package(HWY 1.0 REQUIRED)  # hwy::hwy is local to src/, where the CPU engine finds it

# The library's objects, compiled once for the component libraries, archived again as one. The
# CUDA engine's kernels are objects of their own target (leanattn_cuda_kernels), which
# leanattn_cuda's objects do not list.
set(leanattn_installed_objects
  $<TARGET_OBJECTS:leanattn_core> $<TARGET_OBJECTS:leanattn_planner>
  $<TARGET_OBJECTS:leanattn_reference> $<TARGET_OBJECTS:leanattn_cpu>
  $<TARGET_OBJECTS:leanattn_executors>)
set(leanattn_not_installed_headers)
if(TARGET leanattn_cuda)
  list(APPEND leanattn_installed_objects $<TARGET_OBJECTS:leanattn_cuda>
       $<TARGET_OBJECTS:leanattn_cuda_kernels>)
else()
  set(leanattn_not_installed_headers PATTERN cuda_engine.hpp EXCLUDE)
endif()
add_library(leanattn STATIC ${leanattn_installed_objects})
add_library(leanattn::leanattn ALIAS leanattn)
set_target_properties(leanattn PROPERTIES LINKER_LANGUAGE CXX EXPORT_NAME leanattn)
target_include_directories(leanattn INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${LEANATTN_GENERATED_INCLUDE_DIR}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(leanattn INTERFACE cxx_std_20)
# Static: these are link-only requirements of the consumer (leanattnConfig.cmake finds them).
target_link_libraries(leanattn PUBLIC Threads::Threads PRIVATE hwy::hwy)
if(TARGET leanattn_cuda)
  target_link_libraries(leanattn PRIVATE CUDA::cudart_static)
endif()

install(TARGETS leanattn EXPORT leanattnTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/leanattn ${LEANATTN_GENERATED_INCLUDE_DIR}/leanattn
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development
        FILES_MATCHING PATTERN *.hpp ${leanattn_not_installed_headers})
install(EXPORT leanattnTargets NAMESPACE leanattn:: DESTINATION ${leanattn_cmake_dir}
        COMPONENT development)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/leanattnConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/leanattnConfig.cmake
                              INSTALL_DESTINATION ${leanattn_cmake_dir})
# 0.x: a minor release may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/leanattnConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/leanattnConfig.cmake
              ${PROJECT_BINARY_DIR}/leanattnConfigVersion.cmake
        DESTINATION ${leanattn_cmake_dir} COMPONENT development)

if(TARGET leanattn_cli)
  install(TARGETS leanattn_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
endif()

# The wheel (pyproject.toml builds the CLI too): the tool inside the package, leanattn/bin/leanattn,
# started by the console script leanattn._cli:main. Inside the package auditwheel repairs it like
# the extension module (its libhwy points at the wheel's copy).
if(LEANATTN_BUILD_PYTHON AND TARGET leanattn_cli)
  install(TARGETS leanattn_cli RUNTIME DESTINATION leanattn/bin COMPONENT python)
endif()
