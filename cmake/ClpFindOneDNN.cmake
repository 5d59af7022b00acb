# oneDNN (Debian: libdnnl-dev) for clp-transfer's bf16 similarity product and bench_bf16, looked
# for so that it can only ever be absent, never a failed configure: Debian's dnnl-config.cmake
# calls find_package(OpenCL REQUIRED) (its GPU runtime is OpenCL), which stops the whole
# configure where the OpenCL headers are missing. So OpenCL is looked for first, quietly, and
# oneDNN only when it is there; otherwise dnnl_FOUND is false and the programs are float32 only.
# Sets dnnl_FOUND in the includer's scope (and the DNNL::dnnl target when found); included once per
# directory that needs it (the packages are cached). CLP_WITH_ONEDNN=OFF skips it.

option(CLP_WITH_ONEDNN "Programs: a bf16 similarity product through oneDNN where it is found" ON)
set(dnnl_FOUND FALSE)
if(CLP_WITH_ONEDNN)
  find_package(OpenCL QUIET)
  if(OpenCL_FOUND)
    find_package(dnnl CONFIG QUIET)
  else()
    message(STATUS "oneDNN: not looked for (its CMake package needs the OpenCL headers: opencl-c-headers, "
                   "ocl-icd-opencl-dev); float32 only")
  endif()
endif()
if(dnnl_FOUND AND NOT TARGET DNNL::dnnl)
  set(dnnl_FOUND FALSE)
endif()
