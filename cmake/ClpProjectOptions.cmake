# Settings for this project's own programs and tests, never forced on consumers of clp::clp.

# Warnings are errors in our own code only.
# GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 intrinsics (avx512fintrin.h) once
# Eigen's kernels are inlined with -march=native; those false positives are not errors.
function(clp_project_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
  endif()
endfunction()

# libFuzzer binaries of the clp-transfer program's input parsers (tests/fuzz), built with
# -fsanitize=fuzzer,address,undefined: clang only (the "fuzz" preset). Their replay drivers are
# built and tested either way.
option(CLP_BUILD_FUZZERS "Build the libFuzzer targets of tests/fuzz (needs clang)" OFF)
if(CLP_BUILD_FUZZERS AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "CLP_BUILD_FUZZERS needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: "
                      "cmake --preset fuzz, or -DCMAKE_CXX_COMPILER=clang++")
endif()

# Our programs and tests use OpenMP when the compiler has it (the library's threads become
# an OpenMP team; see include/clp/parallel.hpp).
find_package(OpenMP COMPONENTS CXX)
function(clp_use_openmp target)
  if(OpenMP_CXX_FOUND)
    target_link_libraries(${target} PRIVATE OpenMP::OpenMP_CXX)
  endif()
endfunction()

# The programs hand Eigen's float products to an optimized BLAS (Debian's OpenBLAS) when one is
# found: measured faster than Eigen's own kernels on this class of machine (docs/performance.md,
# "Why OpenBLAS"). The headers stay header-only; this is a build choice of the programs.
option(CLP_USE_BLAS "Programs: let Eigen call an external BLAS for matrix products" ON)
if(CLP_USE_BLAS)
  find_package(BLAS)
endif()
function(clp_use_blas target)
  if(CLP_USE_BLAS AND BLAS_FOUND)
    target_compile_definitions(${target} PRIVATE EIGEN_USE_BLAS CLP_HAVE_BLAS)
    target_link_libraries(${target} PRIVATE ${BLAS_LIBRARIES})
  endif()
endfunction()

# The library compiled once for this project's programs and tests, as they want it: with OpenMP
# where the compiler has it, and with BLAS, Eigen's float products handed to the BLAS as
# clp_use_blas does. What links one is built with CLP_SEPARATE_COMPILATION (and, with BLAS,
# EIGEN_USE_BLAS), so that the engine is compiled once per variant instead of once per
# executable; the installed clp::compiled is the same source without either.
#   clp_compiled_variant(<target> [BLAS])
function(clp_compiled_variant target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "BLAS" "" "")
  add_library(${target} STATIC "${CLP_COMPILED_SOURCE}")
  target_link_libraries(${target} PUBLIC clp::clp)
  target_compile_definitions(${target} PUBLIC CLP_SEPARATE_COMPILATION)
  clp_project_warnings(${target})
  if(OpenMP_CXX_FOUND)
    target_link_libraries(${target} PUBLIC OpenMP::OpenMP_CXX)
  endif()
  if(arg_BLAS AND CLP_USE_BLAS AND BLAS_FOUND)
    target_compile_definitions(${target} PUBLIC EIGEN_USE_BLAS CLP_HAVE_BLAS)
    target_link_libraries(${target} PUBLIC ${BLAS_LIBRARIES})
  endif()
endfunction()
clp_compiled_variant(clp_compiled_openmp)           # the library's tests
clp_compiled_variant(clp_compiled_programs BLAS)    # clp-transfer, its tests, the benchmarks

# Unity builds: each test executable (and the clp-transfer program) compiles as a few translation
# units of at most CLP_UNITY_BATCH_SIZE sources each, so that the engine's templates and Eigen's
# kernels are instantiated and optimized once per unit instead of once per source file (what it
# saves: docs/building.md). A target's sources are shared evenly among as few units as that
# allows (19 sources at 16 make 10 + 9, not 16 + 3): a unit of one or two files costs nearly as
# much as a full one. A test file's helpers therefore live in a namespace named after the file.
# Never applied to the header checks, whose point is that each header compiles alone.
option(CLP_UNITY_BUILD "Compile the test executables and the clp-transfer program as unity builds" ON)
set(CLP_UNITY_BATCH_SIZE 16 CACHE STRING "Most source files per unity translation unit (CLP_UNITY_BUILD)")
function(clp_unity_build target)
  if(CLP_UNITY_BUILD)
    get_target_property(sources ${target} SOURCES)
    list(FILTER sources INCLUDE REGEX "\\.(cpp|cxx|cc)$")
    list(LENGTH sources count)
    set(batch ${CLP_UNITY_BATCH_SIZE})
    if(count GREATER 0 AND batch GREATER 0)
      math(EXPR units "(${count} + ${batch} - 1) / ${batch}")
      math(EXPR batch "(${count} + ${units} - 1) / ${units}")
    endif()
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${batch})
  endif()
endfunction()

# A test executable of this project, each of its doctest cases registered with CTest as
# "<PREFIX><case name>":
#   clp_add_test_target(<target> PREFIX <prefix> SOURCES <files>...
#                       [LIBRARIES <targets>...] [INCLUDE_DIRECTORIES <folders>...]
#                       [DEFINITIONS <definitions>...] [DEPENDS <targets>...])
# Every such target links doctest and its one shared runner (tests/support/doctest_main.cpp,
# compiled once), is a unity build (above), has tests/ on its include path (for "support/..."),
# gets the project's warnings, and reports a case that skipped (tests/support/skip.hpp prints the
# marker) as skipped, not passed. Call it where doctest was found and its CMake module included
# (tests/CMakeLists.txt does both).
set(CLP_TEST_SKIP_MARKER "CLP-TEST-SKIPPED")  # = CLP_TEST_SKIP_MARKER in tests/support/skip.hpp
function(clp_add_test_target target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "PREFIX" "SOURCES;LIBRARIES;INCLUDE_DIRECTORIES;DEFINITIONS;DEPENDS")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_SOURCES)
    message(FATAL_ERROR "clp_add_test_target(${target}): unknown arguments '${arg_UNPARSED_ARGUMENTS}' or no SOURCES")
  endif()
  if(NOT COMMAND doctest_discover_tests)
    message(FATAL_ERROR "clp_add_test_target(${target}): find_package(doctest) and include(doctest) first")
  endif()
  if(NOT TARGET clp_doctest_main)
    add_library(clp_doctest_main OBJECT "${PROJECT_SOURCE_DIR}/tests/support/doctest_main.cpp")
    target_link_libraries(clp_doctest_main PRIVATE doctest::doctest)
  endif()
  add_executable(${target} ${arg_SOURCES} $<TARGET_OBJECTS:clp_doctest_main>)
  target_link_libraries(${target} PRIVATE doctest::doctest ${arg_LIBRARIES})
  target_include_directories(${target} PRIVATE "${PROJECT_SOURCE_DIR}/tests" ${arg_INCLUDE_DIRECTORIES})
  target_compile_definitions(${target} PRIVATE ${arg_DEFINITIONS})
  target_compile_features(${target} PRIVATE cxx_std_17)
  clp_project_warnings(${target})
  clp_unity_build(${target})
  if(arg_DEPENDS)
    add_dependencies(${target} ${arg_DEPENDS})
  endif()
  doctest_discover_tests(${target} TEST_PREFIX "${arg_PREFIX}"
                         PROPERTIES SKIP_REGULAR_EXPRESSION "${CLP_TEST_SKIP_MARKER}")
endfunction()
