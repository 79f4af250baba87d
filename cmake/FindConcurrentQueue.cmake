# moodycamel ConcurrentQueue ships neither a CMake config nor a .pc file in Debian 12
# (libconcurrentqueue-dev 1.0.3 installs /usr/include/concurrentqueue/concurrentqueue.h).
# Newer upstream installs use concurrentqueue/moodycamel/; both layouts are accepted.
if(NOT TARGET moodycamel::concurrentqueue)
  find_path(CONCURRENTQUEUE_INCLUDE_DIR concurrentqueue.h
            PATH_SUFFIXES concurrentqueue concurrentqueue/moodycamel)
  if(NOT CONCURRENTQUEUE_INCLUDE_DIR)
    message(FATAL_ERROR "concurrentqueue.h not found: apt-get install libconcurrentqueue-dev")
  endif()
  add_library(moodycamel::concurrentqueue INTERFACE IMPORTED GLOBAL)
  set_target_properties(moodycamel::concurrentqueue PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${CONCURRENTQUEUE_INCLUDE_DIR}")
endif()
