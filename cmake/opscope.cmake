# Helpers shared by every layer.
#
# opscope_layer(NAME SOURCES... DEPS ...) creates the static library opscope_NAME from the
# sources in the current folder; DEPS are linked PRIVATE unless listed under PUBLIC_DEPS, so a
# layer cannot include a header of a layer it does not name.
function(opscope_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(opscope_${name} STATIC ${L_SOURCES})
  # The include firewall: the layer's include path is a folder holding one link, NAME -> src/NAME,
  # so `#include "NAME/x.h"` resolves for the layer and for whoever links it, and a header of a
  # layer that is not linked does not resolve at all (src/ itself is never on the path).
  set(firewall ${PROJECT_BINARY_DIR}/include_firewall/${name})
  file(MAKE_DIRECTORY ${firewall})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${name} ${firewall}/${name} SYMBOLIC)
  target_include_directories(opscope_${name} PUBLIC ${firewall} ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(opscope_${name} PUBLIC ${L_PUBLIC_DEPS} PRIVATE ${L_DEPS})
endfunction()

# In a cross build (the arm64 preset) tests run under an emulator: the ones that cannot get the
# label `host_only` (OPSCOPE_HOST_ONLY in their LABELS), and scripts/test-arm64.sh leaves them out.
if(CMAKE_CROSSCOMPILING)
  set(OPSCOPE_HOST_ONLY host_only)
else()
  set(OPSCOPE_HOST_ONLY "")
endif()

# opscope_test(NAME SOURCES... DEPS ...) builds a GoogleTest binary and registers its tests.
function(opscope_test name)
  if(NOT OPSCOPE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main Threads::Threads)
  target_compile_definitions(${name} PRIVATE
    OPSCOPE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    OPSCOPE_BINARY_DIR="${PROJECT_BINARY_DIR}")
  # One label only: gtest_discover_tests (CMake 3.25) passes the properties on as a flat list,
  # so a second label would become a property name of its own. host_only wins.
  set(label "${T_LABELS}")
  if("host_only" IN_LIST T_LABELS)
    set(label host_only)
  endif()
  list(LENGTH label n)
  if(n GREATER 1)
    message(FATAL_ERROR "opscope_test(${name}): one label only (got ${T_LABELS})")
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${label}")
endfunction()

# opscope_fuzzer(NAME SOURCES... DEPS ... [SEEDS dir...]) builds a libFuzzer target in OPSCOPE_FUZZ
# builds (and nothing otherwise). The libraries it links are already instrumented by the top-level
# fuzz flags; this only links libFuzzer's driver. Every fuzzer has a regression corpus in
# tests/fuzz_corpus/NAME/, which a test of the ordinary build replays without sanitizers and the
# CTest `fuzz_replay.NAME` of the fuzz build replays through the instrumented binary (ASan, UBSan
# aborting: `ctest --preset fuzz`). SEEDS are more input folders a campaign starts from
# (scripts/fuzz.sh reads them from fuzzers.txt) and the replay runs too.
function(opscope_fuzzer name)
  if(NOT OPSCOPE_FUZZ)
    return()
  endif()
  cmake_parse_arguments(F "" "" "SOURCES;DEPS;SEEDS" ${ARGN})
  add_executable(${name} ${F_SOURCES})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${name} PRIVATE ${F_DEPS})
  set(inputs ${PROJECT_SOURCE_DIR}/tests/fuzz_corpus/${name})
  foreach(d ${F_SEEDS})
    list(APPEND inputs ${PROJECT_SOURCE_DIR}/${d})
  endforeach()
  list(REMOVE_DUPLICATES inputs)
  set_property(GLOBAL APPEND PROPERTY OPSCOPE_FUZZERS ${name})
  set_property(GLOBAL PROPERTY OPSCOPE_FUZZER_INPUTS_${name} "${inputs}")
  # -runs=0: every input once, nothing mutated and nothing written into the source tree.
  add_test(NAME fuzz_replay.${name}
           COMMAND ${name} -runs=0 -rss_limit_mb=2048 -timeout=120 ${inputs})
  set_tests_properties(fuzz_replay.${name} PROPERTIES LABELS fuzz
                       ENVIRONMENT UBSAN_OPTIONS=print_stacktrace=1)
endfunction()
