# Helpers that keep the per-folder CMake small: every folder is one library (or binary) made of
# the .cc files it holds, so adding a source file needs no CMake edit.

function(paratune_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                         -Wnon-virtual-dtor -Wno-unused-parameter)
  if(PARATUNE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(PARATUNE_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# Sources of a folder, recursively, without main.cc files and without *_test.cc files.
function(paratune_sources out dir)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.cc)
  list(FILTER srcs EXCLUDE REGEX ".*/main\\.cc$")
  list(FILTER srcs EXCLUDE REGEX ".*_test\\.cc$")
  set(${out} ${srcs} PARENT_SCOPE)
endfunction()

# paratune_library(name dir DEPS ...): a static library of the folder's sources. A folder that
# holds no source yet gives an INTERFACE library, so dependants link while it is being written.
function(paratune_library name dir)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  paratune_sources(srcs ${dir})
  if(srcs)
    add_library(${name} STATIC ${srcs})
    target_include_directories(${name} PUBLIC ${CMAKE_SOURCE_DIR})
    target_link_libraries(${name} PUBLIC ${ARG_DEPS})
    paratune_warnings(${name})
    if(PARATUNE_SANITIZE)
      target_link_options(${name} PUBLIC -fsanitize=address,undefined)
    endif()
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${CMAKE_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()

# paratune_executable(name dir [FROM folder...] DEPS ...): a program. `dir` is its folder under
# cmd/ (its main.cc); the sources of the FROM folders (main.cc and *_test.cc excluded) are
# compiled into the binary itself, not a library, so what registers itself when the program
# starts (the CLI's commands, PARATUNE_COMMAND) is kept by the linker.
function(paratune_executable name dir)
  cmake_parse_arguments(ARG "" "" "FROM;DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.cc)
  foreach(from ${ARG_FROM})
    paratune_sources(from_srcs ${from})
    list(APPEND srcs ${from_srcs})
  endforeach()
  add_executable(${name} ${srcs})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  paratune_warnings(${name})
endfunction()

# paratune_test(name dir DEPS ...): one GoogleTest binary of the folder's *_test.cc files,
# registered with CTest test by test. Labels let `ctest -L unit` pick a layer.
function(paratune_test name dir)
  cmake_parse_arguments(ARG "" "LABEL" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.cc)
  if(NOT srcs)
    return()
  endif()
  add_executable(${name} ${srcs})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR})
  target_compile_definitions(${name} PRIVATE
      PARATUNE_SOURCE_DIR="${CMAKE_SOURCE_DIR}" PARATUNE_BINARY_DIR="${CMAKE_BINARY_DIR}")
  paratune_warnings(${name})
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  # A hung test fails on its own (its slowest case takes about a tenth of this) instead of
  # holding CI until the job's limit.
  if(ARG_LABEL STREQUAL "integration")
    set(test_timeout 600)
  else()
    set(test_timeout 120)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${test_timeout}
                       DISCOVERY_TIMEOUT 60)
endfunction()

# paratune_embed(target dir function): compiles every file under dir into target, reachable
# through `function()` declared in agents/core/embedded.h. Rebuilt when a file there changes.
function(paratune_embed target dir fn)
  file(GLOB_RECURSE deps CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*)
  set(out ${CMAKE_BINARY_DIR}/generated/${fn}.cc)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DROOT=${CMAKE_SOURCE_DIR}/${dir} -DNAME=${fn}
            -P ${CMAKE_SOURCE_DIR}/cmake/EmbedFiles.cmake
    DEPENDS ${deps} ${CMAKE_SOURCE_DIR}/cmake/EmbedFiles.cmake
    COMMENT "Embedding ${dir}")
  target_sources(${target} PRIVATE ${out})
endfunction()
