# Runs one command and checks its exit code and output; the driver of the command-line contract tests.
#
#   cmake -DEXPECT_EXIT=<code>
#         [-DSTDOUT_MATCHES=<regex>] [-DSTDERR_MATCHES=<regex>]   output must match (CMake regex)
#         [-DSTDOUT_LINES=<n>] [-DSTDERR_LINES=<n>]               output must have exactly n lines
#         [-DREQUIRE_BACKEND=<name>]                             skip unless `<command> --list` lists it
#         -P run_and_check.cmake -- <command> [args...]
#
# A skipped check prints "SKIPPED: ..." (pair it with the test property SKIP_REGULAR_EXPRESSION).
# Failures print the command, its exit code and both streams.

set(command "")
set(after_separator FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE 0 ${last})
  if(after_separator)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_separator TRUE)
  endif()
endforeach()
if(NOT command)
  message(FATAL_ERROR "run_and_check.cmake: no command after --")
endif()
if(NOT DEFINED EXPECT_EXIT)
  message(FATAL_ERROR "run_and_check.cmake: set -DEXPECT_EXIT=<code>")
endif()

if(DEFINED REQUIRE_BACKEND)
  list(GET command 0 program)
  execute_process(COMMAND "${program}" --list RESULT_VARIABLE list_rc OUTPUT_VARIABLE list_out ERROR_VARIABLE list_err)
  if(NOT list_rc EQUAL 0)
    message(FATAL_ERROR "`${program} --list` exited ${list_rc}:\n${list_out}${list_err}")
  endif()
  string(REGEX MATCH "(^|\n)${REQUIRE_BACKEND} " listed "${list_out}")
  if(NOT listed)
    message(STATUS "SKIPPED: backend ${REQUIRE_BACKEND} is not registered in this build")
    return()
  endif()
endif()

execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REPLACE ";" " " shown "${command}")
set(problems "")

if(NOT rc STREQUAL "${EXPECT_EXIT}")
  string(APPEND problems "  exit code ${rc}, expected ${EXPECT_EXIT}\n")
endif()
foreach(stream IN ITEMS STDOUT STDERR)
  if(stream STREQUAL "STDOUT")
    set(text "${out}")
  else()
    set(text "${err}")
  endif()
  if(DEFINED ${stream}_MATCHES AND NOT text MATCHES "${${stream}_MATCHES}")
    string(APPEND problems "  ${stream} does not match the regex '${${stream}_MATCHES}'\n")
  endif()
  if(DEFINED ${stream}_LINES)
    string(REGEX MATCHALL "\n" newlines "${text}")
    list(LENGTH newlines lines)
    if(NOT text STREQUAL "" AND NOT text MATCHES "\n$")
      math(EXPR lines "${lines} + 1")  # an unterminated last line
    endif()
    if(NOT lines EQUAL ${stream}_LINES)
      string(APPEND problems "  ${stream} has ${lines} lines, expected ${${stream}_LINES}\n")
    endif()
  endif()
endforeach()

if(problems)
  message(FATAL_ERROR "FAILED: ${shown}\n${problems}--- stdout ---\n${out}--- stderr ---\n${err}")
endif()
message(STATUS "ok: ${shown} -> exit ${rc}\n--- stdout ---\n${out}--- stderr ---\n${err}")
