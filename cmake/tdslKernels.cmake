# tdslKernels.cmake: tdsl_add_kernels, part of the installed CMake package (tdslConfig.cmake).
#
#   tdsl_add_kernels(TARGET FILE.tdsl [FN NAME…] [OPTIONS TDSLC_ARG…])
#
# At build time, `tdslc FILE --emit=obj` compiles the file's functions (every one, or
# those FN names, one object each) for the host CPU, and `tdslc FILE --emit=header`
# writes STEM.h, the C declaration of each function, into a folder of the build tree
# that TARGET then includes: `#include "STEM.h"`. OPTIONS go to the --emit=obj command
# (for example -O3 or --cpu=haswell). TARGET links tdsl::tdslrt.
function(tdsl_add_kernels target file)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "FN;OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tdsl_add_kernels: unexpected arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  get_filename_component(src ${file} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  get_filename_component(stem ${file} NAME_WE)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/tdsl_kernels)
  set(header ${dir}/${stem}.h)
  add_custom_command(OUTPUT ${header}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND tdsl::tdslc ${src} --emit=header -o ${header}
    DEPENDS ${src} tdsl::tdslc
    COMMENT "tdslc ${file} --emit=header" VERBATIM)
  set(objs)
  if(arg_FN)
    foreach(fn ${arg_FN})
      set(obj ${dir}/${stem}.${fn}.o)
      add_custom_command(OUTPUT ${obj}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
        COMMAND tdsl::tdslc ${src} --fn ${fn} --emit=obj -o ${obj} ${arg_OPTIONS}
        DEPENDS ${src} tdsl::tdslc
        COMMENT "tdslc ${file} --fn ${fn} --emit=obj" VERBATIM)
      list(APPEND objs ${obj})
    endforeach()
  else()
    set(obj ${dir}/${stem}.o)
    add_custom_command(OUTPUT ${obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
      COMMAND tdsl::tdslc ${src} --emit=obj -o ${obj} ${arg_OPTIONS}
      DEPENDS ${src} tdsl::tdslc
      COMMENT "tdslc ${file} --emit=obj" VERBATIM)
    set(objs ${obj})
  endif()
  set_source_files_properties(${objs} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  target_sources(${target} PRIVATE ${objs} ${header})
  target_include_directories(${target} PRIVATE ${dir})
  target_link_libraries(${target} PRIVATE tdsl::tdslrt)
endfunction()
