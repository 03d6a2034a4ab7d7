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

# ewgpu_embed_folder(TARGET tgt NAMESPACE ns OUTPUT name DIR folder)
# Writes generated/<name>.cpp embedding every file of `folder` byte for byte (cmake/embed_binary.cmake) and
# defining `std::span<const ewgpu::EmbeddedFile> ns::files()`; rebuilt when a file changes.
set(EWGPU_EMBED_BINARY_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_binary.cmake)
function(ewgpu_embed_folder)
  cmake_parse_arguments(E "" "TARGET;NAMESPACE;OUTPUT;DIR" "" ${ARGN})
  set(out ${CMAKE_BINARY_DIR}/generated/${E_OUTPUT}.cpp)
  file(GLOB files CONFIGURE_DEPENDS ${E_DIR}/*)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DNS=${E_NAMESPACE} -DSYM=ewgpu_embedded_${E_OUTPUT} -DDIR=${E_DIR}
            -P ${EWGPU_EMBED_BINARY_SCRIPT}
    DEPENDS ${files} ${EWGPU_EMBED_BINARY_SCRIPT} VERBATIM)
  add_custom_target(${E_OUTPUT}_gen DEPENDS ${out})
  add_dependencies(${E_TARGET} ${E_OUTPUT}_gen)
  target_sources(${E_TARGET} PRIVATE ${out})
endfunction()
