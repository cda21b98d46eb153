# Installation: headers, libtutti.so, tools, CMake package tutti::tutti, pkg-config file.
include(CMakePackageConfigHelpers)
install(TARGETS tutti EXPORT tuttiTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES include/tutti/tutti.h include/tutti/tutti.hpp include/tutti/error.hpp
        include/tutti/datatype.hpp include/tutti/export.h
        ${CMAKE_BINARY_DIR}/generated/tutti/config.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tutti)
install(EXPORT tuttiTargets NAMESPACE tutti:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tutti)
configure_package_config_file(cmake/tuttiConfig.cmake.in
  ${CMAKE_BINARY_DIR}/tuttiConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tutti)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tuttiConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/tuttiConfig.cmake ${CMAKE_BINARY_DIR}/tuttiConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tutti)
configure_file(cmake/tutti.pc.in ${CMAKE_BINARY_DIR}/tutti.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/tutti.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
foreach(tool tuttirun tutti-info tutti-topo tutti-sim)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
