# Helpers that give every module and test the same flags (design/architecture.md §5.6).
#   ds4_add_module(name SOURCES ... DEPS ...)        -> static library ds4_<name>, alias ds4::<name>
#   ds4_add_test(name SOURCES ... DEPS ... LABELS ...) -> GoogleTest binary registered with ctest
#   ds4_add_app(name SOURCES ... DEPS ...)            -> executable in build/bin/

set(DS4_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wno-missing-field-initializers)
if(DS4_WERROR)
  list(APPEND DS4_WARNINGS -Werror)
endif()

function(ds4_apply_flags target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${DS4_WARNINGS}>)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  if(DS4_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=undefined)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
  if(DS4_TSAN)
    target_compile_options(${target} PRIVATE -fsanitize=thread -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=thread)
  endif()
endfunction()

function(ds4_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(ds4_${name} STATIC ${ARG_SOURCES})
  add_library(ds4::${name} ALIAS ds4_${name})
  ds4_apply_flags(ds4_${name})
  if(DS4_SANITIZE)
    # The modules, where the tests spend their time, at -O1 (AddressSanitizer's advice for speed;
    # Debug keeps asserts): at -O0 the unit tests took 18 min on 2 cores, two checkpoint
    # conversions 7 of them (433 s -> 88 s). Test and app files stay at -O0: -O1 doubles their
    # compile time (src/api/anthropic_test.cpp: 16.7 -> 36.5 s of CPU) for no run-time gain.
    target_compile_options(ds4_${name} PRIVATE -O1)
    if(DS4_FUZZ AND name IN_LIST DS4_FUZZ_COVERAGE_MODULES)
      target_compile_options(ds4_${name} PRIVATE -fsanitize=fuzzer-no-link)
    endif()
  endif()
  if(ARG_DEPS)
    target_link_libraries(ds4_${name} PUBLIC ${ARG_DEPS})
  endif()
endfunction()

function(ds4_add_app name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  ds4_apply_flags(${name})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
endfunction()

function(ds4_add_test name)
  # FIXTURES: CTest fixtures every test case requires. Paths a test needs are best passed as
  # compile definitions (target_compile_definitions), which survive discovery unmangled.
  # COST: CTest's COST of every test case of the binary (seconds, roughly): `ctest -j` starts the
  # costly ones first, so a clean build (no timing history yet) does not end on one long test.
  if(NOT DS4_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "COST" "SOURCES;DEPS;LABELS;FIXTURES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  ds4_apply_flags(${name})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  set(props LABELS "${ARG_LABELS}" ENVIRONMENT "DS4_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  if(ARG_FIXTURES)
    list(APPEND props FIXTURES_REQUIRED "${ARG_FIXTURES}")
  endif()
  if(ARG_COST)
    list(APPEND props COST ${ARG_COST})
  endif()
  # Listing a binary's tests loads its shared libraries; the CUDA ones (cuBLAS and cuBLASLt, ~0.6
  # GB) took 5.3 s from a cold page cache on the 2-core CI machine, past CMake's 5 s default.
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 120 PROPERTIES ${props})
endfunction()

# Gives a test binary the path of the vocabulary GGUF that the tokenizer_vocab_fixture test builds
# (pair it with FIXTURES ds4_vocab in ds4_add_test).
function(ds4_test_uses_vocab target)
  if(DS4_BUILD_TESTS)
    target_compile_definitions(${target} PRIVATE DS4_TEST_VOCAB_PATH="${DS4_TEST_VOCAB}")
  endif()
endfunction()
