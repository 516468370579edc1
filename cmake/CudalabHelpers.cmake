# Helpers so that adding a chapter, a test file or a benchmark is one line (docs/architecture.md):
#
#   lab_chapter(ch03)                                                     # chapters/NN_slug/CMakeLists.txt
#   lab_test(ch03 test_vector_add.cpp EXERCISES 3.2)                      # tests/ch03/CMakeLists.txt
#   lab_bench(ch03 vector_add.cpp saxpy.cpp ...)                          # bench/ch03/CMakeLists.txt
#
# Tracks: <ch>_reference (reference/*), <ch>_starter (starter/*, generated from the reference by
# scripts/variants.py and committed), and one library per variant: <ch>_pitfall_<name> for each
# `// BEGIN PITFALL <name>` region of the reference files, <ch>_mutant_<name> for each entry of
# mutants.toml (only with -DCUDALAB_MUTANTS=ON). Variant sources are written into the build
# directory at configure time by scripts/variants.py, with a manifest of lab_variant(...) calls;
# they are never committed. Each reference file is compiled once, as its own object library, so a
# variant recompiles only the files it changes (and, for a changed header, the files including it).

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

# Compile options of one object library built from reference file <name> of chapter <ch>.
function(_lab_source_options ch name target)
  get_property(sm90a GLOBAL PROPERTY CUDALAB_${ch}_SM90A)
  if(name IN_LIST sm90a)
    # sm_90a only: with an sm_90 image beside it, which cubin the driver loads on an H200 is not
    # ours to choose. Elsewhere the kernel has no image and is never launched (the host checks for
    # compute capability 9.0 first).
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES OFF)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_90a,code=sm_90a>)
  endif()
endfunction()

# lab_chapter(<ch> [LIBS <targets>...] [SM90A_SOURCES <file names>...])
#   LIBS: extra libraries the chapter's kernels link (cuBLAS, cuDNN, ...).
#   SM90A_SOURCES: reference file names whose kernels use sm_90a-only instructions (wgmma); they
#   are compiled for sm_90a only, in every track and variant.
# Then scripts/variants.py writes the chapter's pitfall and mutant sources into the build
# directory, and the manifest it writes declares each one with lab_variant().
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

  set_property(GLOBAL PROPERTY CUDALAB_${ch}_SM90A "${ARG_SM90A_SOURCES}")
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
      if(NOT TARGET ${ch}_${track}_${id})
        message(FATAL_ERROR "lab_chapter(${ch}): SM90A_SOURCES names ${name}, which ${track}/ lacks")
      endif()
      _lab_source_options(${ch} ${name} ${ch}_${track}_${id})
    endforeach()
    _lab_archive(${ch}_${track} ${objs})
    set_property(GLOBAL PROPERTY CUDALAB_${ch}_${track}_OBJECTS ${objs})
  endforeach()

  set_property(GLOBAL APPEND PROPERTY CUDALAB_CHAPTERS ${ch})
  set_property(GLOBAL PROPERTY CUDALAB_${ch}_DIR "${dir}")
  set_property(GLOBAL PROPERTY CUDALAB_${ch}_VARIANTS "")

  # Pitfalls and mutants: generated now, from the reference files as they are; an edit of a
  # reference file, of mutants.toml or of the generator re-runs this configure step. A
  # starter-only build (the handout) has none.
  if(NOT "reference" IN_LIST tracks)
    return()
  endif()
  set(out "${CMAKE_CURRENT_BINARY_DIR}/variants")
  execute_process(
    COMMAND "${Python3_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/scripts/variants.py" --configure "${dir}" "${out}"
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "lab_chapter(${ch}): scripts/variants.py --configure failed:\n${err}")
  endif()
  file(GLOB ref_files "${dir}/reference/*")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
    ${ref_files} "${PROJECT_SOURCE_DIR}/scripts/variants.py")
  if(EXISTS "${dir}/mutants.toml")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${dir}/mutants.toml")
  endif()
  include("${out}/variants.cmake")
endfunction()

# lab_variant(<ch> pitfall|mutant <name> EXERCISES <ids>... [RACE] DIR <dir> SOURCES <files>...)
# Called by the manifest scripts/variants.py writes (never by hand): the reference track with
# the SOURCES (reference file names) compiled from <dir> instead of reference/.
#   RACE: the planted bug is a shared-memory data race (a missing __syncthreads). A race shows as a
#   wrong answer only on some runs, so a test alone catches it intermittently; compute-sanitizer
#   racecheck finds it on every run. The variant's tests get the extra ctest label "race", and
#   scripts/gpu_suite runs racecheck on their executables.
# Mutants are built only with -DCUDALAB_MUTANTS=ON.
function(lab_variant ch kind name)
  cmake_parse_arguments(ARG "RACE" "DIR" "EXERCISES;SOURCES" ${ARGN})
  if(NOT kind MATCHES "^(pitfall|mutant)$" OR ARG_UNPARSED_ARGUMENTS OR NOT ARG_EXERCISES OR NOT ARG_SOURCES)
    message(FATAL_ERROR "lab_variant(${ch} ${kind} ${name}): malformed (${ARGN})")
  endif()
  if(kind STREQUAL "mutant" AND NOT CUDALAB_MUTANTS)
    return()
  endif()
  get_property(dir GLOBAL PROPERTY CUDALAB_${ch}_DIR)
  get_property(tracks GLOBAL PROPERTY CUDALAB_${ch}_TRACKS)
  if(NOT "reference" IN_LIST tracks)
    return()  # a starter-only build (the handout): no pitfalls, no mutants
  endif()
  set(_lab_api ${ch}_api)
  set(prefix ${ch}_${kind}_${name})
  set(srcs "")
  foreach(f IN LISTS ARG_SOURCES)
    list(APPEND srcs "${ARG_DIR}/${f}")
  endforeach()
  _lab_objects(${prefix} "${dir}/reference" var_objs ${srcs})
  get_property(ref_objs GLOBAL PROPERTY CUDALAB_${ch}_reference_OBJECTS)
  foreach(f IN LISTS ARG_SOURCES)
    string(MAKE_C_IDENTIFIER "${f}" id)
    list(REMOVE_ITEM ref_objs ${ch}_reference_${id})
    _lab_source_options(${ch} ${f} ${prefix}_${id})
  endforeach()
  _lab_archive(${prefix} ${ref_objs} ${var_objs})
  set_property(GLOBAL APPEND PROPERTY CUDALAB_${ch}_VARIANTS ${kind}_${name})
  set_property(GLOBAL PROPERTY CUDALAB_${ch}_${kind}_${name}_EXERCISES ${ARG_EXERCISES})
  set_property(GLOBAL PROPERTY CUDALAB_${ch}_${kind}_${name}_RACE ${ARG_RACE})
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
# The test file is compiled once and linked to the reference, the starter, and every pitfall and
# mutant of the same chapter that plants its bug in one of these exercises.
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
  get_property(variants GLOBAL PROPERTY CUDALAB_${ch}_VARIANTS)
  foreach(v IN LISTS variants)
    get_property(vex GLOBAL PROPERTY CUDALAB_${ch}_${v}_EXERCISES)
    foreach(ex IN LISTS vex)
      if(ex IN_LIST ARG_EXERCISES)
        list(APPEND tracks ${v})
        break()
      endif()
    endforeach()
  endforeach()

  foreach(track IN LISTS tracks)
    set(exe ${track}_${ch}_${stem})
    add_executable(${exe} $<TARGET_OBJECTS:${obj}>)
    set_target_properties(${exe} PROPERTIES LINKER_LANGUAGE CXX)
    target_link_libraries(${exe} PRIVATE ${ch}_${track} ${ch}_api cudalab_testing_main ${ARG_LIBS})
    if(track MATCHES "^(pitfall|mutant)_(.*)$")
      set(kind "${CMAKE_MATCH_1}")
      set(vname "${CMAKE_MATCH_2}")
      set(labels "${ch};${kind};${kind}:${ch}.${vname};${ex_labels}")
      get_property(race GLOBAL PROPERTY CUDALAB_${ch}_${track}_RACE)
      if(race)
        list(APPEND labels race)  # scripts/gpu_suite also runs racecheck on this executable
      endif()
      _lab_register_tests(${exe} "${kind}.${ch}.${vname}." "${labels}")
    else()
      if(ex_rules)
        _lab_register_tests(${exe} "${track}.${ch}." "${ch};${track}" ${ex_rules})
      else()
        _lab_register_tests(${exe} "${track}.${ch}." "${ch};${track};${ex_labels}")
      endif()
    endif()
  endforeach()
endfunction()

# lab_bench(<ch> <files>... [LIBS <targets>...]) in bench/<ch>/CMakeLists.txt, the chapter's topic
# files in the order their rows are listed (static registration follows link order): the chapter's
# Google Benchmark executables, one per track, from the same objects, all in <build>/bench/ wherever
# the call stands: bench_<ch> (linked to the reference track) and
# bench_<ch>_starter (linked to the starter: the learner's kernels), same rows, each with its
# vendor rows. One process cannot hold both tracks (they define the same API symbols), so
# scripts/lab check compares the two through the vendor row measured in each process.
# Benchmarks are .cpp; a .cu file is allowed only to wrap vendor device-side libraries (CUB)
# behind a plain function (no fmt in .cu: docs/toolchain.md).
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
    set_target_properties(${exe} PROPERTIES LINKER_LANGUAGE CXX
                          RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/bench")
    target_link_libraries(${exe} PRIVATE ${ch}_${track} ${ch}_api cudalab_bench ${ARG_LIBS})
    lab_target_defaults(${exe})
    set_property(GLOBAL APPEND PROPERTY CUDALAB_BENCHES ${exe})
  endforeach()
endfunction()

# lab_app(<ch> <target> <sources>... [LIBS <targets>...]): a program of the chapter (apps/, tools/,
# mpi/) linked to the chapter's main track: the reference where it is built, else the starter (the
# handout has no reference/, and its first command builds everything: an app linked to a track
# that does not exist there would stop it). Returns nothing; the target is a plain executable.
function(lab_app ch target)
  cmake_parse_arguments(ARG "" "" "LIBS" ${ARGN})
  if(TARGET ${ch}_reference)
    set(track ${ch}_reference)
  elseif(TARGET ${ch}_starter)
    set(track ${ch}_starter)
  else()
    message(FATAL_ERROR "lab_app(${ch} ${target}): the chapter has neither a reference nor a starter track")
  endif()
  add_executable(${target} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${target} PRIVATE ${track} ${ch}_api fmt::fmt ${ARG_LIBS})
  lab_target_defaults(${target})
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
