# ewgpu_add_test(name SOURCES a.cpp ... [LABELS gpu slow ...] [TIMEOUT s] [COST s] [ARGS --gtest_filter=...])
# A GoogleTest executable linked to the engine library, registered with CTest.
# Label "gpu" marks tests that need a WebGPU adapter (SwiftShader here).
# COST: the seconds the test takes on the 2-core CI machine, for its longest ones. `ctest -j` starts the costliest
# first, so the longest do not start last and run alone at the end (a fresh build has no CTestCostData.txt).
function(ewgpu_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT;COST" "SOURCES;LABELS;ARGS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ewgpu_lib GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE EWGPU_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}"
    ENVIRONMENT "EWGPU_SOURCE_DIR=${CMAKE_SOURCE_DIR};NODEVICE_SELECT=1")
  if(T_COST)
    set_tests_properties(${name} PROPERTIES COST ${T_COST})
  endif()
endfunction()
