# ewgpu_embed_files(TARGET tgt NAMESPACE ns OUTPUT name FILES a.wgsl b.wgsl ...)
# Writes generated/<name>.cpp defining `std::string_view ns::find(std::string_view file_stem)` and a table
# of (stem, text); the text is embedded at build time and regenerated when a file changes.
set(EWGPU_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_one.cmake)
function(ewgpu_embed_files)
  cmake_parse_arguments(E "" "TARGET;NAMESPACE;OUTPUT" "FILES" ${ARGN})
  set(out ${CMAKE_BINARY_DIR}/generated/${E_OUTPUT}.cpp)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DNS=${E_NAMESPACE} "-DFILES=${E_FILES}" -P ${EWGPU_EMBED_SCRIPT}
    DEPENDS ${E_FILES} ${EWGPU_EMBED_SCRIPT} VERBATIM)
  # The rule lives in this directory; a custom target carries it to a target made elsewhere (CMP0118).
  add_custom_target(${E_OUTPUT}_gen DEPENDS ${out})
  add_dependencies(${E_TARGET} ${E_OUTPUT}_gen)
  target_sources(${E_TARGET} PRIVATE ${out})
endfunction()
