# Helpers so that adding a chapter, a pitfall, a test file or a benchmark is one line:
#
#   lab_chapter(ch03)                                                     # chapters/NN_slug/CMakeLists.txt
#   lab_pitfall(ch03 missing_bounds_check REPLACES vector_add.cu EXERCISES 3.2)
#   lab_test(ch03 test_vector_add.cpp EXERCISES 3.2)                      # tests/ch03/CMakeLists.txt
#   lab_bench(ch03 ch03_first_kernels.cpp)                                # bench/CMakeLists.txt
#
# Tracks: <ch>_reference (reference/*), <ch>_starter (starter/*, generated from the reference by
# scripts/gen_starter.py) and <ch>_pitfall_<name> (the reference with one file swapped for
# pitfalls/<name>.*). Each reference file is compiled once, as its own object library, so a pitfall
# recompiles only the file it plants its bug in.

# The tracks to build. A chapter without reference/ (the student handout: scripts/lab handout)
# builds its starter track alone, without pitfalls; -DCUDALAB_TRACKS=starter does the same in a
# full tree (scripts/grade --submission grades in such a build).
set(CUDALAB_TRACKS "reference;starter" CACHE STRING "Tracks to build: reference;starter, or starter")

# Flags shared by every target of ours: warnings on, line info for profilers and sanitizers.
function(lab_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra -lineinfo>)
  if(CUDALAB_WERROR)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Werror>
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
  endif()
  if(CUDALAB_SYNC_LAUNCHES)
    target_compile_definitions(${target} PRIVATE CUDALAB_SYNC_LAUNCHES=1)
  endif()
endfunction()

# One object library per source file; returns the list of object-library targets.
function(_lab_objects prefix include_dir out_var)
  set(targets "")
  foreach(src IN LISTS ARGN)
    get_filename_component(name "${src}" NAME)
    string(MAKE_C_IDENTIFIER "${name}" id)
    set(t ${prefix}_${id})
    add_library(${t} OBJECT "${src}")
    target_link_libraries(${t} PUBLIC ${_lab_api})
    target_include_directories(${t} PRIVATE "${include_dir}")
    lab_target_defaults(${t})
    list(APPEND targets ${t})
  endforeach()
  set(${out_var} ${targets} PARENT_SCOPE)
endfunction()

function(_lab_archive name)
  set(objs "")
  foreach(t IN LISTS ARGN)
    list(APPEND objs $<TARGET_OBJECTS:${t}>)
  endforeach()
  add_library(${name} STATIC ${objs})
  set_target_properties(${name} PROPERTIES LINKER_LANGUAGE CXX)
  target_link_libraries(${name} PUBLIC ${_lab_api})
endfunction()

# lab_chapter(<ch> [LIBS <targets>...] [SM90A_SOURCES <file names>...])
#   LIBS: extra libraries the chapter's kernels link (cuBLAS, cuDNN, ...).
#   SM90A_SOURCES: reference file names whose kernels use sm_90a-only instructions (wgmma); they
#   are compiled for compute_90a/sm_90a in addition to the configured architectures.
function(lab_chapter ch)
  cmake_parse_arguments(ARG "" "" "LIBS;SM90A_SOURCES" ${ARGN})
  set(dir "${CMAKE_CURRENT_SOURCE_DIR}")
  set(_lab_api ${ch}_api)

  add_library(${ch}_api INTERFACE)
  target_include_directories(${ch}_api INTERFACE "${dir}/include")
  target_link_libraries(${ch}_api INTERFACE cudalab ${ARG_LIBS})

  # cpu/: oracles and host-side logic of the lesson, shared by every track.
  file(GLOB cpu_src CONFIGURE_DEPENDS "${dir}/cpu/*.cpp")
  if(cpu_src)
    add_library(${ch}_cpu STATIC ${cpu_src})
    target_include_directories(${ch}_cpu PUBLIC "${dir}/include")
    target_link_libraries(${ch}_cpu PUBLIC cudalab ${ARG_LIBS})
    lab_target_defaults(${ch}_cpu)
    target_link_libraries(${ch}_api INTERFACE ${ch}_cpu)
  endif()

  set(tracks "")
  foreach(track IN LISTS CUDALAB_TRACKS)
    if(IS_DIRECTORY "${dir}/${track}")
      list(APPEND tracks ${track})
    endif()
  endforeach()
  if(NOT tracks)
    message(FATAL_ERROR "lab_chapter(${ch}): none of the tracks ${CUDALAB_TRACKS} has a folder in ${dir}")
  endif()
  set_property(GLOBAL PROPERTY CUDALAB_${ch}_TRACKS "${tracks}")
  foreach(track IN LISTS tracks)
    file(GLOB src CONFIGURE_DEPENDS "${dir}/${track}/*.cu" "${dir}/${track}/*.cpp")
    if(NOT src)
      message(FATAL_ERROR "lab_chapter(${ch}): no sources in ${dir}/${track}")
    endif()
    _lab_objects(${ch}_${track} "${dir}/${track}" objs ${src})
    foreach(name IN LISTS ARG_SM90A_SOURCES)
      string(MAKE_C_IDENTIFIER "${name}" id)
      if(TARGET ${ch}_${track}_${id})
        target_compile_options(${ch}_${track}_${id} PRIVATE
          $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_90a,code=sm_90a>)
      endif()
    endforeach()
    _lab_archive(${ch}_${track} ${objs})
    set_property(GLOBAL PROPERTY CUDALAB_${ch}_${track}_OBJECTS ${objs})
  endforeach()

  set_property(GLOBAL APPEND PROPERTY CUDALAB_CHAPTERS ${ch})
  set_property(GLOBAL PROPERTY CUDALAB_${ch}_DIR "${dir}")
  set_property(GLOBAL PROPERTY CUDALAB_${ch}_SM90A "${ARG_SM90A_SOURCES}")
  set_property(GLOBAL PROPERTY CUDALAB_${ch}_PITFALLS "")
endfunction()

# lab_pitfall(<ch> <name> REPLACES <reference file name> EXERCISES <ids>... [RACE])
#   RACE: the planted bug is a shared-memory data race (a missing __syncthreads). A race shows as a
#   wrong answer only on some runs, so a test alone catches it intermittently; compute-sanitizer
#   racecheck finds it on every run. The pitfall's tests get the extra ctest label "race", and
#   scripts/gpu_suite runs racecheck on their executables: the pitfall counts as caught when a
#   test fails or racecheck reports a hazard.
function(lab_pitfall ch name)
  cmake_parse_arguments(ARG "RACE" "REPLACES" "EXERCISES" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "lab_pitfall(${ch} ${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  foreach(ex IN LISTS ARG_EXERCISES)  # a misspelt option after EXERCISES would land here
    if(NOT ex MATCHES "^[0-9]+\\.[0-9]+$")
      message(FATAL_ERROR "lab_pitfall(${ch} ${name}): '${ex}' is not an exercise id (N.k): a misspelt option? (the only one is RACE)")
    endif()
  endforeach()
  get_property(dir GLOBAL PROPERTY CUDALAB_${ch}_DIR)
  get_property(tracks GLOBAL PROPERTY CUDALAB_${ch}_TRACKS)
  if(NOT "reference" IN_LIST tracks)
    return()  # a starter-only build (the handout): no pitfalls
  endif()
  if(NOT ARG_REPLACES OR NOT ARG_EXERCISES)
    message(FATAL_ERROR "lab_pitfall(${ch} ${name}): give REPLACES <file> and EXERCISES <ids>")
  endif()
  if(NOT EXISTS "${dir}/reference/${ARG_REPLACES}")
    message(FATAL_ERROR "lab_pitfall(${ch} ${name}): reference/${ARG_REPLACES} does not exist")
  endif()
  file(GLOB src "${dir}/pitfalls/${name}.cu" "${dir}/pitfalls/${name}.cpp")
  if(NOT src)
    message(FATAL_ERROR "lab_pitfall(${ch} ${name}): no pitfalls/${name}.cu or .cpp")
  endif()
  set(_lab_api ${ch}_api)
  _lab_objects(${ch}_pitfall_${name} "${dir}/reference" pit_obj ${src})
  string(MAKE_C_IDENTIFIER "${ARG_REPLACES}" replaced)
  get_property(ref_objs GLOBAL PROPERTY CUDALAB_${ch}_reference_OBJECTS)
  list(REMOVE_ITEM ref_objs ${ch}_reference_${replaced})
  get_property(sm90a GLOBAL PROPERTY CUDALAB_${ch}_SM90A)
  if(ARG_REPLACES IN_LIST sm90a)
    target_compile_options(${pit_obj} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_90a,code=sm_90a>)
  endif()
  _lab_archive(${ch}_pitfall_${name} ${ref_objs} ${pit_obj})
  set_property(GLOBAL APPEND PROPERTY CUDALAB_${ch}_PITFALLS ${name})
  set_property(GLOBAL PROPERTY CUDALAB_${ch}_PITFALL_${name}_EXERCISES ${ARG_EXERCISES})
  set_property(GLOBAL PROPERTY CUDALAB_${ch}_PITFALL_${name}_RACE ${ARG_RACE})
endfunction()

# Registers a test executable with CTest. Discovery is ours (cmake/CudalabDiscover.cmake, run by
# ctest): every GoogleTest case becomes a ctest test named <prefix><Suite>.<Test>, labelled with
# <labels> plus "gpu" when the suite name ends in "Gpu" (else "cpu"); the skip helper prints
# "skipped: <reason>", which ctest reports as skipped — never as passed.
# ex_rules (optional): "N.k=<regex>" entries (lab_test's CASES): a case gets the label ex:N.k only
# when its full GoogleTest name matches <regex>; a case that matches no exercise gets "worked".
function(_lab_register_tests exe prefix labels)
  set(ex_rules "${ARGN}")
  set(inc "${CMAKE_CURRENT_BINARY_DIR}/${exe}_tests.cmake")
  file(GENERATE OUTPUT "${inc}" CONTENT
"set(_lab_exe [==[$<TARGET_FILE:${exe}>]==])
set(_lab_prefix [==[${prefix}]==])
set(_lab_labels [==[${labels}]==])
set(_lab_ex_rules [==[${ex_rules}]==])
set(_lab_workdir [==[${CMAKE_CURRENT_BINARY_DIR}]==])
include([==[${PROJECT_SOURCE_DIR}/cmake/CudalabDiscover.cmake]==])
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${inc}")
endfunction()

# lab_test(<ch> <file.cpp> EXERCISES <ids>... [CASES "<id>=<regex>"...] [LIBS <targets>...])
# The test file is compiled once and linked to the reference, the starter, and every pitfall of
# the same chapter that plants its bug in one of these exercises.
# CASES: which GoogleTest cases grade an exercise, when a file also tests worked examples (e.g. the
# other steps of a ladder). "5.1=/sequential_" gives the label ex:5.1 only to the cases whose full
# name (Prefix/Suite.Test/Param) matches the CMake regex; an exercise without a CASES entry keeps
# every case of the file; a case that matches no exercise is labelled "worked" (not graded).
# (Write the regex without square brackets and semicolons.)
# WORKED instead of EXERCISES: the file tests worked examples only (label "worked", not graded).
function(lab_test ch file)
  cmake_parse_arguments(ARG "WORKED" "" "EXERCISES;LIBS;CASES" ${ARGN})
  if(NOT ARG_EXERCISES AND NOT ARG_WORKED)
    message(FATAL_ERROR "lab_test(${ch} ${file}): name the exercises it checks (EXERCISES 3.1 ...), or WORKED")
  endif()
  set(ex_rules "")
  if(ARG_CASES)
    foreach(ex IN LISTS ARG_EXERCISES)
      set(rx "")
      foreach(rule IN LISTS ARG_CASES)
        if(rule MATCHES "^([0-9]+\\.[0-9]+)=(.+)$")
          if(CMAKE_MATCH_1 STREQUAL ex)
            set(rx "${CMAKE_MATCH_2}")
          elseif(NOT CMAKE_MATCH_1 IN_LIST ARG_EXERCISES)
            message(FATAL_ERROR "lab_test(${ch} ${file}): CASES names ${CMAKE_MATCH_1}, not in EXERCISES")
          endif()
        else()
          message(FATAL_ERROR "lab_test(${ch} ${file}): CASES entry '${rule}' is not <N.k>=<regex>")
        endif()
      endforeach()
      if(rx STREQUAL "")
        set(rx ".*")
      endif()
      list(APPEND ex_rules "${ex}=${rx}")
    endforeach()
  endif()
  get_filename_component(stem "${file}" NAME_WE)
  set(obj ${ch}_${stem}_obj)
  add_library(${obj} OBJECT "${file}")
  target_link_libraries(${obj} PUBLIC ${ch}_api cudalab_testing ${ARG_LIBS})
  lab_target_defaults(${obj})

  set(ex_labels "")
  foreach(ex IN LISTS ARG_EXERCISES)
    list(APPEND ex_labels "ex:${ex}")
  endforeach()
  if(ARG_WORKED)
    list(APPEND ex_labels worked)
  endif()

  get_property(tracks GLOBAL PROPERTY CUDALAB_${ch}_TRACKS)
  get_property(pitfalls GLOBAL PROPERTY CUDALAB_${ch}_PITFALLS)
  foreach(p IN LISTS pitfalls)
    get_property(pex GLOBAL PROPERTY CUDALAB_${ch}_PITFALL_${p}_EXERCISES)
    foreach(ex IN LISTS pex)
      if(ex IN_LIST ARG_EXERCISES)
        list(APPEND tracks pitfall_${p})
        break()
      endif()
    endforeach()
  endforeach()

  foreach(track IN LISTS tracks)
    set(exe ${track}_${ch}_${stem})
    add_executable(${exe} $<TARGET_OBJECTS:${obj}>)
    set_target_properties(${exe} PROPERTIES LINKER_LANGUAGE CXX)
    target_link_libraries(${exe} PRIVATE ${ch}_${track} ${ch}_api cudalab_testing_main ${ARG_LIBS})
    if(track MATCHES "^pitfall_(.*)$")
      set(pname "${CMAKE_MATCH_1}")
      set(labels "${ch};pitfall;pitfall:${ch}.${pname};${ex_labels}")
      get_property(race GLOBAL PROPERTY CUDALAB_${ch}_PITFALL_${pname}_RACE)
      if(race)
        list(APPEND labels race)  # scripts/gpu_suite also runs racecheck on this executable
      endif()
      _lab_register_tests(${exe} "pitfall.${ch}.${pname}." "${labels}")
    else()
      if(ex_rules)
        _lab_register_tests(${exe} "${track}.${ch}." "${ch};${track}" ${ex_rules})
      else()
        _lab_register_tests(${exe} "${track}.${ch}." "${ch};${track};${ex_labels}")
      endif()
    endif()
  endforeach()
endfunction()

# lab_bench(<ch> <files>... [LIBS <targets>...]): the chapter's Google Benchmark executables, one
# per track, from the same objects: bench_<ch> (linked to the reference track) and
# bench_<ch>_starter (linked to the starter: the learner's kernels), same rows, each with its
# vendor rows. One process cannot hold both tracks (they define the same API symbols), so
# scripts/lab check compares the two through the vendor row measured in each process.
# Benchmarks are .cpp; a .cu file is allowed only to wrap vendor device-side libraries (CUB)
# behind a plain function (no fmt in .cu).
function(lab_bench ch)
  cmake_parse_arguments(ARG "" "" "LIBS" ${ARGN})
  set(obj bench_${ch}_obj)
  add_library(${obj} OBJECT ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${obj} PUBLIC ${ch}_api cudalab_bench ${ARG_LIBS})
  lab_target_defaults(${obj})
  get_property(tracks GLOBAL PROPERTY CUDALAB_${ch}_TRACKS)
  if(NOT tracks)
    set(tracks reference)
  endif()
  foreach(track IN LISTS tracks)
    if(track STREQUAL "reference")
      set(exe bench_${ch})
    else()
      set(exe bench_${ch}_${track})
    endif()
    add_executable(${exe} $<TARGET_OBJECTS:${obj}>)
    set_target_properties(${exe} PROPERTIES LINKER_LANGUAGE CXX)
    target_link_libraries(${exe} PRIVATE ${ch}_${track} ${ch}_api cudalab_bench ${ARG_LIBS})
    lab_target_defaults(${exe})
    set_property(GLOBAL APPEND PROPERTY CUDALAB_BENCHES ${exe})
  endforeach()
endfunction()

# lab_common_test(<file.cpp> [LIBS ...]): a unit test of libcudalab itself (part of the reference set).
function(lab_common_test file)
  cmake_parse_arguments(ARG "" "" "LIBS" ${ARGN})
  get_filename_component(stem "${file}" NAME_WE)
  set(exe common_${stem})
  add_executable(${exe} "${file}")
  target_link_libraries(${exe} PRIVATE cudalab_testing_main fmt::fmt ${ARG_LIBS})
  lab_target_defaults(${exe})
  _lab_register_tests(${exe} "reference.common." "common;reference")
endfunction()
