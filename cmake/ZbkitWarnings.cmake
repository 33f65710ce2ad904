# SPDX-License-Identifier: Apache-2.0
# zbkit_set_warnings(target): the project's warning level, -Werror with ZBKIT_WERROR, and the
# sanitizers of ZBKIT_SANITIZE. Applied per target so third-party code is not affected.
function(zbkit_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow)
  if(ZBKIT_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(ZBKIT_SANITIZE)
  add_compile_options(-fsanitize=${ZBKIT_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${ZBKIT_SANITIZE})
endif()
