# SPDX-License-Identifier: Apache-2.0
# zbkit_set_warnings(target): the project's warning level, -Werror with ZBKIT_WERROR, and the
# sanitizers of ZBKIT_SANITIZE. Applied per target so third-party code is not affected.
function(zbkit_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow)
  if(ZBKIT_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # In a batch every source but the first is an included file, and GCC warns when a class with
    # external linkage there (a pimpl's Impl) holds a type from an anonymous namespace; compiled
    # alone, the same file is silent. Each batch is still one translation unit, so nothing is
    # shared across files that should not be.
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
  if(ZBKIT_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(ZBKIT_SANITIZE)
  add_compile_options(-fsanitize=${ZBKIT_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${ZBKIT_SANITIZE})
endif()

# The fuzz build instruments every component for coverage; only the fuzz programs link libFuzzer.
if(ZBKIT_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ZBKIT_BUILD_FUZZERS needs clang (libFuzzer); scripts/fuzz.sh sets it up")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
