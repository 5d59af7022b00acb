# Included by tests/CMakeLists.txt when CLP_TEST_BUILD_CHECKS is on.

# Every public header compiles on its own, header-only and with CLP_SEPARATE_COMPILATION
# (<clp/impl/src.hpp>, the compiled part itself, is clp::compiled's one source).
file(GLOB_RECURSE clp_public_headers RELATIVE "${PROJECT_SOURCE_DIR}/include" CONFIGURE_DEPENDS
     "${PROJECT_SOURCE_DIR}/include/clp/*.hpp")
list(FILTER clp_public_headers EXCLUDE REGEX "/detail/|^clp/impl/")
set(clp_header_check_sources "")
foreach(header IN LISTS clp_public_headers)
  string(MAKE_C_IDENTIFIER "${header}" name)
  set(source "${CMAKE_CURRENT_BINARY_DIR}/header_check/${name}.cpp")
  file(CONFIGURE OUTPUT "${source}" CONTENT "#include <${header}>\n")
  list(APPEND clp_header_check_sources "${source}")
endforeach()

# The line between public and internal: a header under clp/detail/ (or a subfolder) refuses a
# direct include (each test compiles one such include and expects the refusal), and compiles
# after a public header (the object below includes them all after <clp/clp.hpp> and the xtensor
# adapter; the libtorch adapter's internals compile with <clp/adapters/torch.hpp>, tests/torch).
# internal_header_check.hpp is the refusal itself.
file(GLOB_RECURSE clp_detail_headers RELATIVE "${PROJECT_SOURCE_DIR}/include" CONFIGURE_DEPENDS
     "${PROJECT_SOURCE_DIR}/include/clp/detail/*.hpp")
list(FILTER clp_detail_headers EXCLUDE REGEX "/internal_header_check\\.hpp$")
set(clp_after_public "#include <clp/clp.hpp>\n#include <clp/adapters/xtensor.hpp>\n")
foreach(header IN LISTS clp_detail_headers)
  string(MAKE_C_IDENTIFIER "${header}" name)
  set(source "${CMAKE_CURRENT_BINARY_DIR}/header_check/direct_${name}.cpp")
  file(CONFIGURE OUTPUT "${source}" CONTENT "#include <${header}>\n")
  add_test(NAME header_check.refuses_direct.${name}
           COMMAND "${CMAKE_CXX_COMPILER}" -std=c++17 -fsyntax-only -Wfatal-errors
                   "-I${PROJECT_SOURCE_DIR}/include" "${source}")
  set_tests_properties(header_check.refuses_direct.${name} PROPERTIES
                       PASS_REGULAR_EXPRESSION "clp/detail/ headers are the library's internals")
  if(NOT header MATCHES "/adapters/torch")
    string(APPEND clp_after_public "#include <${header}>\n")
  endif()
endforeach()
file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/header_check/detail_after_public.cpp"
     CONTENT "${clp_after_public}")
# With CLP_SEPARATE_COMPILATION, the public headers alone: the internals after them would be the
# compiled part's bodies, defined here for nothing (clp::compiled compiles them).
add_library(clp_header_check_separate OBJECT ${clp_header_check_sources})
target_link_libraries(clp_header_check_separate PRIVATE clp::clp xtensor)
target_compile_definitions(clp_header_check_separate PRIVATE CLP_SEPARATE_COMPILATION)
clp_project_warnings(clp_header_check_separate)
list(APPEND clp_header_check_sources "${CMAKE_CURRENT_BINARY_DIR}/header_check/detail_after_public.cpp")
add_library(clp_header_check OBJECT ${clp_header_check_sources})
target_link_libraries(clp_header_check PRIVATE clp::clp xtensor)
clp_project_warnings(clp_header_check)

# ... and cleanly as C++20.
file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/header_check/cxx20.cpp"
     CONTENT "#include <clp/clp.hpp>\n#include <clp/adapters/xtensor.hpp>\n")
add_library(clp_header_check_cxx20 OBJECT "${CMAKE_CURRENT_BINARY_DIR}/header_check/cxx20.cpp")
target_link_libraries(clp_header_check_cxx20 PRIVATE clp::clp xtensor)
target_compile_features(clp_header_check_cxx20 PRIVATE cxx_std_20)
clp_project_warnings(clp_header_check_cxx20)

# ... and beside the C library under 'using namespace clp;': no name of clp:: may collide with
# one of <cstring> or <strings.h> (index, rindex, ...) in the uses below.
file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/header_check/using_namespace.cpp" CONTENT [=[
#include <cstring>
#include <strings.h>
#include <clp/clp.hpp>
using namespace clp;
Index count_rows(const Eigen::MatrixXf& source, const Eigen::MatrixXf& helper, Eigen::MatrixXf& output,
                 const vocabulary_overlap& overlap) {
  const synthesis_report report = synthesize_rows(source, helper, overlap, output, make_weighting("paper"));
  synthesize_rows(source, helper, overlap, output, paper_weights{}, synthesis_options{});
  copy_overlap_rows(source, overlap, output);
  overlap_random(source, overlap, output, 1);
  random_init(source, output, 2);
  const knn_overlap_result knn = knn_overlap(source, source, knn_options{3});
  const Index index_of_a = Index(std::strlen("a"));
  return report.copied_rows + knn.tokens + index_of_a;
}
]=])
add_library(clp_header_check_using_namespace OBJECT "${CMAKE_CURRENT_BINARY_DIR}/header_check/using_namespace.cpp")
target_link_libraries(clp_header_check_using_namespace PRIVATE clp::clp)
clp_project_warnings(clp_header_check_using_namespace)
# Its point is that the calls resolve, which optimizing them adds nothing to but compile time.
target_compile_options(clp_header_check_using_namespace PRIVATE -O0)

# Both ways to build give the same bytes: one program of every synthesis the compiled library
# holds, built header-only and against clp::compiled with the same flags, its outputs compared.
foreach(mode header_only compiled)
  add_executable(clp_both_modes_${mode} "${CMAKE_CURRENT_SOURCE_DIR}/consumers/both_modes.cpp")
  clp_project_warnings(clp_both_modes_${mode})
endforeach()
target_link_libraries(clp_both_modes_header_only PRIVATE clp::clp)
target_link_libraries(clp_both_modes_compiled PRIVATE clp::compiled)
add_test(NAME consumer.both_modes_same_bytes
         COMMAND "${CMAKE_COMMAND}" "-DHEADER_ONLY=$<TARGET_FILE:clp_both_modes_header_only>"
                 "-DCOMPILED=$<TARGET_FILE:clp_both_modes_compiled>" "-DOUTPUT=${CMAKE_CURRENT_BINARY_DIR}/both_modes"
                 -P "${CMAKE_CURRENT_SOURCE_DIR}/consumers/same_bytes.cmake")

# Tiny consumer projects: two find the installed package (clp::clp, clp::compiled), one vendors
# the source tree.
set(consumer_prefix "${CMAKE_CURRENT_BINARY_DIR}/consumer-prefix")
add_test(NAME consumer.install
         COMMAND "${CMAKE_COMMAND}" --install "${PROJECT_BINARY_DIR}" --prefix "${consumer_prefix}")
set_tests_properties(consumer.install PROPERTIES FIXTURES_SETUP clp_installed)
add_test(NAME consumer.find_package
         COMMAND "${CMAKE_CTEST_COMMAND}" --build-and-test
                 "${CMAKE_CURRENT_SOURCE_DIR}/consumers/find_package"
                 "${CMAKE_CURRENT_BINARY_DIR}/consumers/find_package"
                 --build-generator "${CMAKE_GENERATOR}"
                 --build-options "-DCMAKE_PREFIX_PATH=${consumer_prefix}"
                 --test-command consumer)
set_tests_properties(consumer.find_package PROPERTIES FIXTURES_REQUIRED clp_installed)
add_test(NAME consumer.find_package_compiled
         COMMAND "${CMAKE_CTEST_COMMAND}" --build-and-test
                 "${CMAKE_CURRENT_SOURCE_DIR}/consumers/find_package_compiled"
                 "${CMAKE_CURRENT_BINARY_DIR}/consumers/find_package_compiled"
                 --build-generator "${CMAKE_GENERATOR}"
                 --build-options "-DCMAKE_PREFIX_PATH=${consumer_prefix}"
                 --test-command consumer)
set_tests_properties(consumer.find_package_compiled PROPERTIES FIXTURES_REQUIRED clp_installed)
add_test(NAME consumer.add_subdirectory
         COMMAND "${CMAKE_CTEST_COMMAND}" --build-and-test
                 "${CMAKE_CURRENT_SOURCE_DIR}/consumers/add_subdirectory"
                 "${CMAKE_CURRENT_BINARY_DIR}/consumers/add_subdirectory"
                 --build-generator "${CMAKE_GENERATOR}"
                 --build-options "-DCLP_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
                 --test-command consumer)

# The installed prefix holds the program too, and clp.pc and clp-compiled.pc for consumers
# without CMake.
if(CLP_BUILD_EXAMPLES)
  add_test(NAME consumer.installed_program COMMAND "${consumer_prefix}/bin/clp-transfer" --version)
  set_tests_properties(consumer.installed_program PROPERTIES FIXTURES_REQUIRED clp_installed
                       PASS_REGULAR_EXPRESSION "^clp-transfer ${PROJECT_VERSION}\n$")
endif()
find_program(CLP_PKG_CONFIG NAMES pkg-config pkgconf)
if(CLP_PKG_CONFIG)
  add_test(NAME consumer.pkg_config
           COMMAND "${CMAKE_COMMAND}" "-DPKG_CONFIG=${CLP_PKG_CONFIG}" "-DPREFIX=${consumer_prefix}"
                   "-DCXX=${CMAKE_CXX_COMPILER}" "-DSOURCE=${CMAKE_CURRENT_SOURCE_DIR}/consumers/consumer.cpp"
                   "-DBINARY=${CMAKE_CURRENT_BINARY_DIR}/pkg_config_consumer"
                   -P "${CMAKE_CURRENT_SOURCE_DIR}/consumers/pkg_config.cmake")
  set_tests_properties(consumer.pkg_config PROPERTIES FIXTURES_REQUIRED clp_installed)
  add_test(NAME consumer.pkg_config_compiled
           COMMAND "${CMAKE_COMMAND}" "-DPKG_CONFIG=${CLP_PKG_CONFIG}" "-DPREFIX=${consumer_prefix}"
                   "-DPACKAGE=clp-compiled" "-DPC_DIR=${CMAKE_INSTALL_LIBDIR}/pkgconfig"
                   "-DCXX=${CMAKE_CXX_COMPILER}" "-DSOURCE=${CMAKE_CURRENT_SOURCE_DIR}/consumers/consumer.cpp"
                   "-DBINARY=${CMAKE_CURRENT_BINARY_DIR}/pkg_config_compiled_consumer"
                   -P "${CMAKE_CURRENT_SOURCE_DIR}/consumers/pkg_config.cmake")
  set_tests_properties(consumer.pkg_config_compiled PROPERTIES FIXTURES_REQUIRED clp_installed)
endif()
