# A consumer without CMake: compiles and runs consumer.cpp with the flags pkg-config reads
# from the installed clp.pc. Run with cmake -P and PKG_CONFIG, PREFIX, CXX, SOURCE, BINARY.
set(ENV{PKG_CONFIG_PATH} "${PREFIX}/share/pkgconfig")
execute_process(COMMAND "${PKG_CONFIG}" --cflags --libs clp OUTPUT_VARIABLE flags RESULT_VARIABLE failed
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(failed)
  message(FATAL_ERROR "pkg-config --cflags --libs clp failed with PKG_CONFIG_PATH=${PREFIX}/share/pkgconfig")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
execute_process(COMMAND "${CXX}" -std=c++17 ${flags} "${SOURCE}" -o "${BINARY}" RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "compiling ${SOURCE} with pkg-config's flags (${flags}) failed")
endif()
execute_process(COMMAND "${BINARY}" RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "${BINARY} failed")
endif()
