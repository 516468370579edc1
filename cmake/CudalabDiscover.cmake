# Run by ctest (through TEST_INCLUDE_FILES) for each test executable: lists its GoogleTest cases
# and adds one ctest test per case. Inputs: _lab_exe, _lab_prefix, _lab_labels, _lab_workdir, and
# _lab_ex_rules ("N.k=<regex>" entries, lab_test's CASES: a case gets ex:N.k when its full name
# matches; a case that matches none gets "worked").
# Works the same on CMake 3.25 and 4.x (no bracketed regex is written to a file: docs/toolchain.md).
# Every exercise label of the file, for the NOT_BUILT / LIST_FAILED entries (scripts/lab check
# finds the executables an exercise needs through them before they are built).
set(_lab_all_labels "${_lab_labels}")
foreach(_lab_rule IN LISTS _lab_ex_rules)
  string(REGEX REPLACE "=.*$" "" _lab_ex "${_lab_rule}")
  list(APPEND _lab_all_labels "ex:${_lab_ex}")
endforeach()
# (ctest lists no command for a missing executable: CUDALAB_TEST_EXE names it.)
get_filename_component(_lab_exe_name "${_lab_exe}" NAME)
if(NOT EXISTS "${_lab_exe}")
  add_test("${_lab_prefix}NOT_BUILT.${_lab_exe_name}" "${_lab_exe}")
  set_tests_properties("${_lab_prefix}NOT_BUILT.${_lab_exe_name}" PROPERTIES LABELS "${_lab_all_labels}"
                       ENVIRONMENT "CUDALAB_TEST_EXE=${_lab_exe}")
  return()
endif()
execute_process(COMMAND "${_lab_exe}" --gtest_list_tests
                OUTPUT_VARIABLE _lab_out RESULT_VARIABLE _lab_rc TIMEOUT 60)
if(NOT _lab_rc EQUAL 0)
  add_test("${_lab_prefix}LIST_FAILED.${_lab_exe_name}" "${_lab_exe}" --gtest_list_tests)
  set_tests_properties("${_lab_prefix}LIST_FAILED.${_lab_exe_name}" PROPERTIES LABELS "${_lab_all_labels}"
                       ENVIRONMENT "CUDALAB_TEST_EXE=${_lab_exe}")
  return()
endif()
string(REPLACE "\n" ";" _lab_lines "${_lab_out}")
set(_lab_suite "")
foreach(_lab_line IN LISTS _lab_lines)
  string(REGEX REPLACE " *#.*$" "" _lab_line "${_lab_line}")
  if(_lab_line STREQUAL "")
    continue()
  endif()
  if(NOT _lab_line MATCHES "^ ")
    set(_lab_suite "${_lab_line}")          # "Suite." or "Prefix/Suite."
    continue()
  endif()
  string(STRIP "${_lab_line}" _lab_case)
  set(_lab_full "${_lab_suite}${_lab_case}")
  if(_lab_full MATCHES "(^|[./])DISABLED_")
    continue()
  endif()
  if(_lab_suite MATCHES "Gpu\\.$")
    set(_lab_kind gpu)
  else()
    set(_lab_kind cpu)
  endif()
  set(_lab_case_labels "${_lab_labels}")
  if(_lab_ex_rules)
    set(_lab_matched FALSE)
    foreach(_lab_rule IN LISTS _lab_ex_rules)
      string(FIND "${_lab_rule}" "=" _lab_eq)
      string(SUBSTRING "${_lab_rule}" 0 ${_lab_eq} _lab_ex)
      math(EXPR _lab_eq "${_lab_eq} + 1")
      string(SUBSTRING "${_lab_rule}" ${_lab_eq} -1 _lab_rx)
      if(_lab_full MATCHES "${_lab_rx}")
        list(APPEND _lab_case_labels "ex:${_lab_ex}")
        set(_lab_matched TRUE)
      endif()
    endforeach()
    if(NOT _lab_matched)
      list(APPEND _lab_case_labels worked)
    endif()
  endif()
  set(_lab_name "${_lab_prefix}${_lab_full}")
  add_test("${_lab_name}" "${_lab_exe}" "--gtest_filter=${_lab_full}")
  set_tests_properties("${_lab_name}" PROPERTIES
    LABELS "${_lab_case_labels};${_lab_kind}"
    SKIP_REGULAR_EXPRESSION "skipped: "
    WORKING_DIRECTORY "${_lab_workdir}"
    TIMEOUT 300)
  if(_lab_suite MATCHES "LargeGpu\\.$")
    # Tens of GB of device memory each: never two at once (they would skip for lack of memory).
    set_tests_properties("${_lab_name}" PROPERTIES RESOURCE_LOCK cudalab_large_device_memory)
  endif()
endforeach()
