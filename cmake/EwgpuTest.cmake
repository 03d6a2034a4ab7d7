# ewgpu_add_test(name SOURCES a.cpp ... [LABELS gpu slow ...] [TIMEOUT s] [ARGS --gtest_filter=...])
# A GoogleTest executable linked to the engine library, registered with CTest.
# Label "gpu" marks tests that need a WebGPU adapter (SwiftShader here).
function(ewgpu_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LABELS;ARGS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ewgpu_lib GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE EWGPU_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}"
    ENVIRONMENT "EWGPU_SOURCE_DIR=${CMAKE_SOURCE_DIR};NODEVICE_SELECT=1")
endfunction()
