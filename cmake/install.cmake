# cmake/install.cmake: what `cmake --install` (and `make install PREFIX=…`) puts under
# the prefix, in the GNUInstallDirs layout:
#   bin/tdslc                          the compiler (LLVM linked in statically)
#   lib/libtdslrt.a, lib/libtdslrt.so  the runtime; the shared one as libtdslrt.so.0
#   include/tdsl.h                     the runtime's C ABI, all the generated code includes
#   share/man/man1/tdslc.1             the man page (docs/tdslc.1)
#   lib/pkgconfig/tdslrt.pc            `pkg-config --cflags --libs tdslrt`
#   lib/cmake/tdsl/                    find_package(tdsl): tdsl::tdslrt (shared),
#                                      tdsl::tdslrt_static, tdsl::tdslc, tdsl_add_kernels()
# Every installed file is relocatable: the pkg-config file and the CMake package find
# the prefix from their own place, and tdslc from its own (driver/paths.c).
# Other parts of tdsl add their own install() rules in their own cmake/*.cmake file.
include(CMakePackageConfigHelpers)

set_target_properties(tdslrt_shared PROPERTIES EXPORT_NAME tdslrt)
set_target_properties(tdslrt PROPERTIES EXPORT_NAME tdslrt_static)
install(TARGETS tdslc tdslrt tdslrt_shared EXPORT tdslTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/runtime/tdsl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/docs/tdslc.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# pkg-config: the prefix is found from the .pc file's own folder (${pcfiledir}).
set(TDSL_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH TDSL_PC_TO_PREFIX /prefix/${TDSL_PC_DIR} /prefix)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/tdslrt.pc.in ${CMAKE_BINARY_DIR}/tdslrt.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/tdslrt.pc DESTINATION ${TDSL_PC_DIR})

# The CMake package.
set(TDSL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tdsl)
install(EXPORT tdslTargets NAMESPACE tdsl:: DESTINATION ${TDSL_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/tdslConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/tdslConfig.cmake INSTALL_DESTINATION ${TDSL_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tdslConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/tdslConfig.cmake ${CMAKE_BINARY_DIR}/tdslConfigVersion.cmake
              ${CMAKE_CURRENT_SOURCE_DIR}/cmake/tdslKernels.cmake DESTINATION ${TDSL_CMAKE_DIR})
