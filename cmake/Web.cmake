# The browser build (EWGPU_WEB=ON under emcmake; scripts/build-web.sh drives it, docs/web.md explains it).
# The host-neutral core (base, gpu, kernels, model, tokenizer, runtime, engine, the OpenAI shapes of api: chat,
# completions, embeddings) is compiled by em++ 3.1.6 into one wasm module, with the gpu layer's second backend
# (src/gpu/web/: the wgpu* functions the gpu layer calls, implemented over navigator.gpu by our own --js-library)
# and the browser host (src/web/: a single-threaded engine the worker's event loop steps). Not built here: store
# (curl, SQLite; the browser's store is Cache Storage, in JS), server, the native api::Engine (threads), apps,
# tools, tests.
if(NOT EMSCRIPTEN)
  message(FATAL_ERROR "EWGPU_WEB needs the emscripten toolchain: run scripts/build-web.sh (emcmake cmake ...)")
endif()
set(EWGPU_WEB_DEPS "" CACHE PATH "PCRE2, utf8proc (wasm) and nlohmann's headers, as scripts/build-web.sh builds them")
if(NOT EXISTS "${EWGPU_WEB_DEPS}/install/lib/libpcre2-8.a" OR NOT EXISTS "${EWGPU_WEB_DEPS}/include/nlohmann")
  message(FATAL_ERROR "EWGPU_WEB_DEPS=${EWGPU_WEB_DEPS} lacks the wasm dependencies: run scripts/build-web.sh")
endif()
include(EmbedFiles)

add_compile_options(-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)
set(EWGPU_WEB_OUT ${CMAKE_BINARY_DIR}/../web CACHE PATH "Where the browser bundle is written (build/web)")
get_filename_component(EWGPU_WEB_OUT ${EWGPU_WEB_OUT} ABSOLUTE)

add_library(ewgpu_lib STATIC)
set_target_properties(ewgpu_lib PROPERTIES OUTPUT_NAME ewgpu)
target_include_directories(ewgpu_lib PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src
  ${CMAKE_BINARY_DIR}/generated ${EWGPU_WEB_DEPS}/include ${EWGPU_WEB_DEPS}/install/include)
# Emscripten's libc++ (a clang-14 snapshot) lacks std::bit_cast; the shim is force-included here only, so the
# core keeps standard C++20 for GCC 12 / libstdc++ and clang-14 / libc++ alike.
target_compile_options(ewgpu_lib PUBLIC -include ${CMAKE_SOURCE_DIR}/src/web/libcxx_compat.h)
target_compile_definitions(ewgpu_lib PUBLIC EWGPU_WEB=1 PCRE2_STATIC=1)
foreach(layer base gpu kernels model tokenizer grammar runtime engine)
  add_subdirectory(${CMAKE_SOURCE_DIR}/src/${layer} ${CMAKE_BINARY_DIR}/src/${layer})
endforeach()
target_sources(ewgpu_lib PRIVATE ${CMAKE_SOURCE_DIR}/src/api/openai.cpp ${CMAKE_SOURCE_DIR}/src/api/prepare.cpp
  ${CMAKE_SOURCE_DIR}/src/api/embeddings.cpp ${CMAKE_SOURCE_DIR}/src/gpu/web/webgpu_web.cpp)
# Of src/store only the prebuilt catalogue (WebLLM's list, embedded as natively) and device fit (canRun,
# recommendModels): the rest is curl, SQLite and files; the browser's store is Cache Storage, in the worker.
target_sources(ewgpu_lib PRIVATE ${CMAKE_SOURCE_DIR}/src/store/catalog.cpp ${CMAKE_SOURCE_DIR}/src/store/device_fit.cpp)
ewgpu_embed_files(TARGET ewgpu_lib NAMESPACE ewgpu::embedded_catalog OUTPUT catalog_embed
  FILES ${CMAKE_SOURCE_DIR}/src/store/webllm-prebuilt-models.tsv)
target_link_libraries(ewgpu_lib PUBLIC ${EWGPU_WEB_DEPS}/install/lib/libpcre2-8.a ${EWGPU_WEB_DEPS}/install/lib/libutf8proc.a)

# The wasm module: the browser host's exports (src/web/web_engine.cpp) + the JS library of the gpu backend.
set(EWGPU_JS_LIBRARY ${CMAKE_SOURCE_DIR}/src/gpu/web/library_ewgpu_webgpu.js)
add_executable(ewgpu_web ${CMAKE_SOURCE_DIR}/src/web/web_engine.cpp)
target_link_libraries(ewgpu_web PRIVATE ewgpu_lib)
set_target_properties(ewgpu_web PROPERTIES OUTPUT_NAME everything-webgpu-core SUFFIX .js
  RUNTIME_OUTPUT_DIRECTORY ${EWGPU_WEB_OUT} LINK_DEPENDS ${EWGPU_JS_LIBRARY})
target_link_options(ewgpu_web PRIVATE
  --js-library ${EWGPU_JS_LIBRARY} --no-entry -lworkerfs.js
  -sENVIRONMENT=worker -sMODULARIZE=1 -sEXPORT_NAME=createEwgpuCore
  -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sINITIAL_MEMORY=64MB -sTOTAL_STACK=1MB
  -sFILESYSTEM=1 -sFORCE_FILESYSTEM=1 -sEXIT_RUNTIME=0
  "-sEXPORTED_RUNTIME_METHODS=['FS','ccall','UTF8ToString','stringToUTF8','lengthBytesUTF8','allocateUTF8']"
  "-sEXPORTED_FUNCTIONS=['_malloc','_free','_ewgpu_web_init','_ewgpu_web_load','_ewgpu_web_unload','_ewgpu_web_chat','_ewgpu_web_cancel','_ewgpu_web_step','_ewgpu_web_state','_ewgpu_web_validate_folder','_ewgpu_web_future_done','_ewgpu_web_device_event','_ewgpu_web_free','_ewgpu_web_md5_new','_ewgpu_web_md5_update','_ewgpu_web_md5_final','_ewgpu_web_configure','_ewgpu_web_catalog','_ewgpu_web_can_run','_ewgpu_web_recommend','_ewgpu_web_batch','_ewgpu_web_embeddings','_ewgpu_web_weights_done']")

# The page side, copied as they are: the ES module, its worker, the declarations and the demo page.
file(GLOB EWGPU_WEB_STATIC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/web/*)
add_custom_target(ewgpu_web_static ALL
  COMMAND ${CMAKE_COMMAND} -E make_directory ${EWGPU_WEB_OUT}
  COMMAND ${CMAKE_COMMAND} -E copy_if_different ${EWGPU_WEB_STATIC} ${EWGPU_WEB_OUT}/
  DEPENDS ${EWGPU_WEB_STATIC} VERBATIM)
