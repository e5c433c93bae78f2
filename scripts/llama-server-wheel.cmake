# Builds llama.cpp's llama-server inside the llama-cpp-python wheel's own build, so a fresh machine
# compiles llama.cpp once. The Makefile hands it to that build as
# CMAKE_ARGS=-DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file>: CMake runs it right after the vendored
# llama.cpp's project() call, before any target exists.

# llama-cpp-python adds llama.cpp as a subproject, where llama.cpp leaves out its tools folder; the
# server lives there. The tools folder adds the mtmd library too, so llama-cpp-python must not add
# it a second time (LLAVA_BUILD): llama.cpp's own mtmd rules build and install the same library.
set(LLAMA_BUILD_TOOLS ON CACHE BOOL "" FORCE)
set(LLAMA_BUILD_SERVER ON CACHE BOOL "" FORCE)
set(LLAVA_BUILD OFF CACHE BOOL "" FORCE)
# No download at build time (the server's prebuilt web UI) and no OpenSSL: the same build on every
# machine.
set(LLAMA_USE_PREBUILT_UI OFF CACHE BOOL "" FORCE)
set(LLAMA_OPENSSL OFF CACHE BOOL "" FORCE)

# Into the package folder, so the wheel carries llama_cpp/bin/llama-server beside llama_cpp/lib
# (and puts no bare lib/ or include/ into site-packages).
set(CMAKE_INSTALL_BINDIR llama_cpp/bin CACHE PATH "" FORCE)
set(CMAKE_INSTALL_LIBDIR llama_cpp/lib CACHE PATH "" FORCE)
set(CMAKE_INSTALL_INCLUDEDIR llama_cpp/include CACHE PATH "" FORCE)
# The program, and the libraries that llama.cpp installs itself, find their libraries in
# llama_cpp/lib (those that llama-cpp-python installs get $ORIGIN, the same folder).
set(CMAKE_INSTALL_RPATH "$ORIGIN/../lib")

# Once llama.cpp's CMakeLists is done, every target exists: the other tools are left out of the
# build (none of them is installed: LLAMA_TOOLS_INSTALL stays off), and the server's library,
# which llama.cpp installs only with its tools, is installed.
function(rigbook_server_only)
  get_property(dirs DIRECTORY tools PROPERTY SUBDIRECTORIES)
  foreach(dir IN LISTS dirs)
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      if(dir MATCHES "/tools/(server|ui)$" OR (dir MATCHES "/tools/mtmd$" AND NOT type STREQUAL "EXECUTABLE"))
        continue()  # the server, its web UI, and the mtmd library (not its command-line tools)
      endif()
      set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL TRUE)
    endforeach()
  endforeach()
  install(TARGETS llama-server-impl LIBRARY)
endfunction()
cmake_language(DEFER CALL rigbook_server_only)
