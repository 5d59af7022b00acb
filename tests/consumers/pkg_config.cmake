# A consumer without CMake: compiles and runs consumer.cpp with the flags pkg-config reads
# from an installed .pc file. Run with cmake -P and PKG_CONFIG, PREFIX, CXX, SOURCE, BINARY;
# PACKAGE (default clp) and PC_DIR, its folder under PREFIX (default share/pkgconfig).
if(NOT PACKAGE)
  set(PACKAGE clp)
endif()
if(NOT PC_DIR)
  set(PC_DIR share/pkgconfig)
endif()
set(ENV{PKG_CONFIG_PATH} "${PREFIX}/${PC_DIR}")
foreach(part cflags libs)  # the libraries after the source, where a static one must stand
  execute_process(COMMAND "${PKG_CONFIG}" --${part} ${PACKAGE} OUTPUT_VARIABLE ${part} RESULT_VARIABLE failed
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(failed)
    message(FATAL_ERROR "pkg-config --${part} ${PACKAGE} failed with PKG_CONFIG_PATH=${PREFIX}/${PC_DIR}")
  endif()
  separate_arguments(${part} UNIX_COMMAND "${${part}}")
endforeach()
execute_process(COMMAND "${CXX}" -std=c++17 ${cflags} "${SOURCE}" -o "${BINARY}" ${libs} RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "compiling ${SOURCE} with pkg-config's flags (${cflags} ... ${libs}) failed")
endif()
execute_process(COMMAND "${BINARY}" RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "${BINARY} failed")
endif()
