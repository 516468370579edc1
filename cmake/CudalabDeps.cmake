# Dependencies, each with an install hint when missing. Required: CUDA toolkit, GTest, fmt,
# benchmark (unless CUDALAB_BUILD_BENCH=OFF). Optional: cuDNN, NCCL, NVML — a chapter that needs
# one is skipped at configure time with a message, never a broken build.
find_package(CUDAToolkit 12.0 REQUIRED)

macro(_cudalab_require pkg hint)
  find_package(${pkg} ${ARGN} QUIET)
  if(NOT ${pkg}_FOUND)
    message(FATAL_ERROR "cudalab needs ${pkg}, which was not found.\n  Install it: ${hint}\n"
                        "  or point CMake at it with -D${pkg}_DIR=<dir holding ${pkg}Config.cmake>.")
  endif()
endmacro()

_cudalab_require(GTest "sudo apt-get install libgtest-dev   (Debian/Ubuntu)")
_cudalab_require(fmt "sudo apt-get install libfmt-dev   (Debian/Ubuntu)")
if(CUDALAB_BUILD_BENCH)
  _cudalab_require(benchmark "sudo apt-get install libbenchmark-dev   (Debian/Ubuntu), or -DCUDALAB_BUILD_BENCH=OFF")
endif()

# Optional libraries, searched next to the toolkit and in the system folders.
set(_cudalab_hint_dirs ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib64 /usr/lib/x86_64-linux-gnu)
set(_cudalab_inc_dirs ${CUDAToolkit_INCLUDE_DIRS} /usr/include /usr/include/x86_64-linux-gnu)

function(_cudalab_optional_lib name header lib hint)
  find_path(${name}_INCLUDE_DIR ${header} HINTS ${_cudalab_inc_dirs})
  find_library(${name}_LIBRARY ${lib} HINTS ${_cudalab_hint_dirs})
  if(${name}_INCLUDE_DIR AND ${name}_LIBRARY)
    add_library(cudalab::${lib} UNKNOWN IMPORTED GLOBAL)
    set_target_properties(cudalab::${lib} PROPERTIES IMPORTED_LOCATION "${${name}_LIBRARY}"
                          INTERFACE_INCLUDE_DIRECTORIES "${${name}_INCLUDE_DIR}")
    set(CUDALAB_HAVE_${name} ON CACHE INTERNAL "")
    message(STATUS "cudalab: found ${name}: ${${name}_LIBRARY}")
  else()
    set(CUDALAB_HAVE_${name} OFF CACHE INTERNAL "")
    message(STATUS "cudalab: ${name} not found (${hint}); what needs it is skipped")
  endif()
endfunction()

_cudalab_optional_lib(CUDNN cudnn.h cudnn "install cuDNN 9: libcudnn9-dev-cuda-13")
_cudalab_optional_lib(NCCL nccl.h nccl "install NCCL 2: libnccl-dev")
# NVML: the header ships with the toolkit on GPU machines; the library comes with the driver.
find_path(NVML_INCLUDE_DIR nvml.h HINTS ${_cudalab_inc_dirs})
if(NVML_INCLUDE_DIR AND TARGET CUDA::nvml)
  set(CUDALAB_HAVE_NVML ON CACHE INTERNAL "")
  message(STATUS "cudalab: found NVML (GPU context in benchmark JSON: clocks, temperature, throttling)")
else()
  set(CUDALAB_HAVE_NVML OFF CACHE INTERNAL "")
  message(STATUS "cudalab: NVML not found (no nvml.h or libnvidia-ml): benchmark JSON carries no clocks/throttle context")
endif()
