# Layering is enforced through include roots: a module's headers are reachable only from
# targets that link it. tutti_expose_dir(target alias dir) makes "alias/x.h" resolve to
# dir/x.h for target and its dependents; tutti_expose_files(target alias files...) does the
# same for single headers (used where a directory mixes layers).
function(tutti_expose_dir target alias dir)
  set(root ${CMAKE_BINARY_DIR}/include_roots/${target})
  get_filename_component(parent ${root}/${alias} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${dir} ${root}/${alias} SYMBOLIC)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE $<BUILD_INTERFACE:${root}>)
  else()
    target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}>)
  endif()
endfunction()

function(tutti_expose_files target alias)
  set(root ${CMAKE_BINARY_DIR}/include_roots/${target})
  file(MAKE_DIRECTORY ${root}/${alias})
  foreach(f ${ARGN})
    get_filename_component(name ${f} NAME)
    file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR}/${f} ${root}/${alias}/${name} SYMBOLIC)
  endforeach()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE $<BUILD_INTERFACE:${root}>)
  else()
    target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}>)
  endif()
endfunction()

# tutti_add_test(NAME name SOURCES ... LIBS ... LABELS ... [TIMEOUT s] [PROCESSORS n])
# The binary's main() is tests/harness/skip_main.cc: a run whose tests all skipped exits 77,
# which ctest shows as "Skipped" (SKIP_RETURN_CODE) with the GTEST_SKIP reasons in its output.
function(tutti_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT;PROCESSORS" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} tutti_gtest_main GTest::gtest Threads::Threads)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(NOT T_PROCESSORS)
    set(T_PROCESSORS 1)
  endif()
  # PROCESSORS: the most ranks (processes or threads) the test runs at once; the fork harness
  # fails a test that runs more (TUTTI_TEST_PROCESSORS).
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
                       SKIP_RETURN_CODE 77 PROCESSORS ${T_PROCESSORS})
  set_property(TEST ${T_NAME} APPEND PROPERTY ENVIRONMENT "TUTTI_TEST_PROCESSORS=${T_PROCESSORS}")
endfunction()

# Gives every test of the calling directory TUTTI_TEST_ENVIRONMENT (cmake/TuttiOptions.cmake),
# appended to what the test sets itself. A test directory's CMakeLists.txt runs it at its end:
#   cmake_language(DEFER CALL tutti_apply_test_environment)
# Every test also requires the fixture tutti_shm_names (tests/CMakeLists.txt): after the tests
# of a run, shm_names_left_test checks that none left a tutti name in /dev/shm.
function(tutti_apply_test_environment)
  get_property(_tests DIRECTORY PROPERTY TESTS)
  foreach(_t IN LISTS _tests)
    if(NOT _t MATCHES "^shm_names_")
      set_property(TEST ${_t} APPEND PROPERTY FIXTURES_REQUIRED tutti_shm_names)
    endif()
    if(TUTTI_TEST_ENVIRONMENT)
      set_property(TEST ${_t} APPEND PROPERTY ENVIRONMENT "${TUTTI_TEST_ENVIRONMENT}")
    endif()
  endforeach()
endfunction()
