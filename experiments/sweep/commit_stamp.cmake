# Writes OUT (a header defining HYDRAGEN_COMMIT) at every build, touching it only when the stamp
# changes: the short hash of HEAD, with "-dirty" when tracked files differ from it, so a CSV row
# never names a commit whose code it did not run.
#   cmake -DSOURCE_DIR=... -DOUT=... -P commit_stamp.cmake
set(stamp "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND head)
    set(stamp "${head}")
    execute_process(COMMAND ${GIT_EXECUTABLE} status --porcelain --untracked-files=no WORKING_DIRECTORY ${SOURCE_DIR}
                    OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(changes)
      set(stamp "${head}-dirty")
    endif()
  endif()
endif()
set(text "#pragma once\n#define HYDRAGEN_COMMIT \"${stamp}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()
