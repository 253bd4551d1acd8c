# Helpers shared by te-mlir's CMake files.

# Our own code is built with warnings as errors and, by default, with
# assertions on even though Debian's LLVM is a release build.
macro(te_set_warning_flags)
  set(TE_COMPILE_OPTIONS -Wall -Wextra -Wno-unused-parameter)
  if(TE_WARNINGS_AS_ERRORS)
    list(APPEND TE_COMPILE_OPTIONS -Werror)
  endif()
  if(TE_ENABLE_ASSERTIONS)
    list(APPEND TE_COMPILE_OPTIONS -UNDEBUG)
  endif()
endmacro()

# te_add_library(name SOURCES... [DEPENDS tablegen targets] [LINK libs])
# Shared libraries against the shared libMLIR/libLLVM, so plugins can later
# link the very same copies.
function(te_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS;LINK" ${ARGN})
  add_library(${name} SHARED ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${TE_COMPILE_OPTIONS})
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  target_link_libraries(${name} PUBLIC ${ARG_LINK})
  # Consumers of the installed SDK (plugins) get the headers through the
  # exported target.
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  add_library(TEMLIR::${name} ALIAS ${name})
  install(TARGETS ${name} EXPORT TEMLIRTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()
