# Options. Dependencies take AUTO (use when found), ON (required) or OFF.
set(TUTTI_WITH_CUDA AUTO CACHE STRING "CUDA support: AUTO, ON or OFF")
set(TUTTI_WITH_IBVERBS AUTO CACHE STRING "InfiniBand verbs transport: AUTO, ON or OFF")
set(TUTTI_WITH_HWLOC AUTO CACHE STRING "hwloc topology discovery: AUTO, ON or OFF")
set(TUTTI_WITH_MPI AUTO CACHE STRING "MPI bootstrap and comparison drivers: AUTO, ON or OFF")
set(TUTTI_WITH_PMIX AUTO CACHE STRING "PMIx launch (mpirun, srun --mpi=pmix): AUTO, ON or OFF")
set(TUTTI_WITH_GLOO AUTO CACHE STRING "Gloo comparison driver (perf only): AUTO, ON or OFF")
set(TUTTI_WITH_TORCH AUTO CACHE STRING "PyTorch backend (python/tutti/torch): AUTO, ON or OFF")
option(TUTTI_BUILD_TESTS "Build the GoogleTest suite" ON)
option(TUTTI_BUILD_PERF "Build the perf tests and micro-benchmarks" ON)
set(TUTTI_SANITIZE "" CACHE STRING "Sanitizers: address, undefined, address,undefined, thread")
option(TUTTI_FUZZ "Build tests/fuzz as libFuzzer targets (clang; see docs/fuzzing.md)" OFF)
set(TUTTI_CUDA_ARCHS "80;90" CACHE STRING "CUDA architectures to build for")

foreach(dep CUDA IBVERBS HWLOC MPI PMIX GLOO TORCH)
  set_property(CACHE TUTTI_WITH_${dep} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${TUTTI_WITH_${dep}}" _v)
  if(NOT _v MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "TUTTI_WITH_${dep}=${TUTTI_WITH_${dep}}: use AUTO, ON or OFF")
  endif()
  set(TUTTI_WITH_${dep} ${_v})
endforeach()

# tutti_resolve_dependency(NAME FOUND HOW_TO_GET): sets TUTTI_HAVE_<NAME> to 0/1 and fails
# when the option is ON but the dependency is missing.
function(tutti_resolve_dependency name found how)
  if(TUTTI_WITH_${name} STREQUAL "OFF")
    set(TUTTI_HAVE_${name} 0 PARENT_SCOPE)
  elseif(${found})
    set(TUTTI_HAVE_${name} 1 PARENT_SCOPE)
    message(STATUS "tutti: ${name} enabled")
  elseif(TUTTI_WITH_${name} STREQUAL "ON")
    message(FATAL_ERROR "TUTTI_WITH_${name}=ON but ${name} was not found (${how}). "
                        "Install it, or configure with -DTUTTI_WITH_${name}=OFF (or AUTO).")
  else()
    set(TUTTI_HAVE_${name} 0 PARENT_SCOPE)
    message(STATUS "tutti: ${name} not found, building without it (${how})")
  endif()
endfunction()

find_package(PkgConfig QUIET)
find_package(Threads REQUIRED)

# hwloc
set(_hwloc_found FALSE)
if(NOT TUTTI_WITH_HWLOC STREQUAL "OFF" AND PkgConfig_FOUND)
  pkg_check_modules(HWLOC IMPORTED_TARGET hwloc>=2.0)
  if(HWLOC_FOUND)
    set(_hwloc_found TRUE)
  endif()
endif()
tutti_resolve_dependency(HWLOC _hwloc_found "apt-get install libhwloc-dev")

# libibverbs (headers only: the library is dlopened at run time)
set(_ibv_found FALSE)
if(NOT TUTTI_WITH_IBVERBS STREQUAL "OFF")
  find_path(IBVERBS_INCLUDE_DIR infiniband/verbs.h)
  if(IBVERBS_INCLUDE_DIR)
    set(_ibv_found TRUE)
  endif()
endif()
tutti_resolve_dependency(IBVERBS _ibv_found "apt-get install libibverbs-dev")

# MPI
set(_mpi_found FALSE)
if(NOT TUTTI_WITH_MPI STREQUAL "OFF")
  find_package(MPI QUIET COMPONENTS C)
  if(MPI_C_FOUND)
    set(_mpi_found TRUE)
  endif()
endif()
tutti_resolve_dependency(MPI _mpi_found "apt-get install libopenmpi-dev openmpi-bin")

# PMIx (the launch environment of Open MPI's mpirun, Slurm's srun --mpi=pmix, PRRTE)
set(_pmix_found FALSE)
if(NOT TUTTI_WITH_PMIX STREQUAL "OFF")
  if(PkgConfig_FOUND)
    pkg_check_modules(PMIX IMPORTED_TARGET pmix)
  endif()
  if(PMIX_FOUND)
    set(_pmix_found TRUE)
  else()
    find_path(PMIX_INCLUDE_DIR pmix.h PATH_SUFFIXES pmix)
    find_library(PMIX_LIBRARY pmix)
    if(PMIX_INCLUDE_DIR AND PMIX_LIBRARY)
      add_library(PkgConfig::PMIX INTERFACE IMPORTED)
      set_target_properties(PkgConfig::PMIX PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES ${PMIX_INCLUDE_DIR} INTERFACE_LINK_LIBRARIES ${PMIX_LIBRARY})
      set(_pmix_found TRUE)
    endif()
  endif()
endif()
tutti_resolve_dependency(PMIX _pmix_found "apt-get install libpmix-dev")

# Gloo (only for the comparison driver)
set(_gloo_found FALSE)
if(NOT TUTTI_WITH_GLOO STREQUAL "OFF")
  find_path(GLOO_INCLUDE_DIR gloo/allreduce_ring.h)
  find_library(GLOO_LIBRARY gloo)
  if(GLOO_INCLUDE_DIR AND GLOO_LIBRARY)
    set(_gloo_found TRUE)
  endif()
endif()
tutti_resolve_dependency(GLOO _gloo_found "apt-get install libgloo-dev")

# CUDA
set(_cuda_found FALSE)
if(NOT TUTTI_WITH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND)
      set(_cuda_found TRUE)
    endif()
  endif()
endif()
tutti_resolve_dependency(CUDA _cuda_found "install the CUDA toolkit in /usr/local/cuda")

# Sanitizers
if(TUTTI_SANITIZE)
  string(REPLACE ";" "," _san "${TUTTI_SANITIZE}")
  if(_san MATCHES "thread" AND _san MATCHES "address")
    message(FATAL_ERROR "TUTTI_SANITIZE: thread cannot be combined with address")
  endif()
  add_compile_options(-fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${_san})
  message(STATUS "tutti: sanitizers ${_san}")
endif()
# The environment ctest gives every test (tutti_add_test, the launch tests): under ASan, the
# leaks that system libraries keep for themselves are suppressed (tests/sanitizers/lsan.supp).
# Every test runs without the tuning cache (docs/tuning.md): a test's choices must not depend
# on what earlier tests (or the user's own jobs) left in ~/.cache; the self-tuning tests set
# their own cache directories.
set(TUTTI_TEST_ENVIRONMENT "TUTTI_TUNING_CACHE=off")
if(TUTTI_SANITIZE)  # tests whose conditions a sanitizer runtime cannot live in skip, naming it
  string(REPLACE ";" "," _san_env "${TUTTI_SANITIZE}")
  list(APPEND TUTTI_TEST_ENVIRONMENT "TUTTI_TEST_SANITIZERS=${_san_env}")
endif()
if(TUTTI_SANITIZE MATCHES "address")
  list(APPEND TUTTI_TEST_ENVIRONMENT
       "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/sanitizers/lsan.supp:print_suppressions=0")
endif()

# libFuzzer build: every object gets coverage instrumentation and ASan+UBSan; the fuzz
# targets link the fuzzer's main (tests/fuzz/CMakeLists.txt).
if(TUTTI_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TUTTI_FUZZ=ON needs clang (libFuzzer): configure a separate build "
                        "directory with -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang "
                        "(apt-get install clang libfuzzer-N-dev libclang-rt-N-dev, N = clang's major version)")
  endif()
  if(TUTTI_SANITIZE)
    message(FATAL_ERROR "TUTTI_FUZZ=ON already builds with address,undefined: drop TUTTI_SANITIZE")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  message(STATUS "tutti: libFuzzer build (address,undefined)")
endif()
