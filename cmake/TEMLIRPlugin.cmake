# te_add_plugin(name SOURCES... [LINK libs...])
#
# A te-mlir plugin: a MODULE library that links the host's libTEPlugin and
# shared libMLIR (never a copy of LLVM of its own), exports only
# te_plugin_query, and installs into the te-mlir plugin directory, where
# NVTE_PLUGIN=<name> finds it. The same function builds the in-tree plugins
# and, through find_package(TEMLIR), out-of-tree ones.
function(te_add_plugin name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LINK" ${ARGN})
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE TEMLIR::TEPlugin TEMLIR::TEMLIRDialect
                        MLIR ${ARG_LINK})
  target_include_directories(${name} SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS}
                             ${MLIR_INCLUDE_DIRS})
  separate_arguments(te_llvm_definitions NATIVE_COMMAND "${LLVM_DEFINITIONS}")
  target_compile_definitions(${name} PRIVATE ${te_llvm_definitions})
  if(TE_COMPILE_OPTIONS)
    target_compile_options(${name} PRIVATE ${TE_COMPILE_OPTIONS})
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    # Installed under <prefix>/lib/te-mlir/plugins: te-mlir's libraries are
    # two levels up.
    INSTALL_RPATH "$ORIGIN/../..;${LLVM_LIBRARY_DIR}")
  # In te-mlir's own build tree, next to its libraries like when installed.
  if(TE_PLUGIN_BUILD_DIR)
    set_target_properties(${name} PROPERTIES
      LIBRARY_OUTPUT_DIRECTORY "${TE_PLUGIN_BUILD_DIR}")
  endif()
  install(TARGETS ${name} LIBRARY DESTINATION "${TE_PLUGIN_INSTALL_DIR}")
endfunction()
