# rtloop_set_target_options(<target>): the warning set, sanitizers and -Werror for rtloop's own
# targets. Generated code (rtloop_proto) gets only the sanitizer flags.
function(rtloop_set_target_options target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wnull-dereference)
  if(RTLOOP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  rtloop_set_sanitizer_options(${target})
endfunction()

function(rtloop_set_sanitizer_options target)
  if(RTLOOP_SANITIZE STREQUAL "address")
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=undefined)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  elseif(RTLOOP_SANITIZE STREQUAL "fuzzer")
    # ASan+UBSan plus libFuzzer's coverage instrumentation; the fuzzers themselves (tests/fuzz)
    # link -fsanitize=fuzzer. clang only (CMakeLists.txt checks).
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link,address,undefined
                                             -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  elseif(RTLOOP_SANITIZE STREQUAL "thread")
    target_compile_options(${target} PRIVATE -fsanitize=thread -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=thread)
  elseif(NOT RTLOOP_SANITIZE STREQUAL "")
    message(FATAL_ERROR
            "RTLOOP_SANITIZE='${RTLOOP_SANITIZE}': use '', 'address', 'thread' or 'fuzzer'")
  endif()
endfunction()
