# Runs the header-only and the compiled build of both_modes.cpp and fails unless they write the
# same bytes. Run with cmake -P and HEADER_ONLY, COMPILED (the two programs), OUTPUT (a prefix
# for their files).
foreach(mode HEADER_ONLY COMPILED)
  execute_process(COMMAND "${${mode}}" "${OUTPUT}.${mode}" RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "${${mode}} failed (${failed})")
  endif()
endforeach()
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${OUTPUT}.HEADER_ONLY" "${OUTPUT}.COMPILED"
                RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "the header-only and the compiled builds wrote different bytes: ${OUTPUT}.HEADER_ONLY, ${OUTPUT}.COMPILED")
endif()
file(SIZE "${OUTPUT}.COMPILED" bytes)
message(STATUS "both builds wrote the same ${bytes} bytes")
