# The default probe of `clp-transfer extend` (probes/en.txt), built into the program as a header
# generated from the text (embed_text.cmake), so that an installed program needs no source tree.
# Included by examples/clp-transfer/CMakeLists.txt after the clp-transfer target is made.
set(clp_extend_generated "${CMAKE_CURRENT_BINARY_DIR}/generated")
set(clp_extend_probe_header "${clp_extend_generated}/extend/default_probe.hpp")
add_custom_command(
  OUTPUT "${clp_extend_probe_header}"
  COMMAND "${CMAKE_COMMAND}" "-DINPUT=${CMAKE_CURRENT_SOURCE_DIR}/extend/probes/en.txt"
          "-DOUTPUT=${clp_extend_probe_header}" -DFUNCTION=default_english_probe
          -P "${CMAKE_CURRENT_SOURCE_DIR}/extend/embed_text.cmake"
  DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/extend/probes/en.txt" "${CMAKE_CURRENT_SOURCE_DIR}/extend/embed_text.cmake"
  COMMENT "Embedding the default probe of clp-transfer extend"
  VERBATIM)
target_sources(clp-transfer PRIVATE "${clp_extend_probe_header}")
target_include_directories(clp-transfer PRIVATE "${clp_extend_generated}")
