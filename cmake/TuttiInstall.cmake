# Installation: headers, libtutti.so, tools, CMake package tutti::tutti, pkg-config file.
# (filled in once src/api builds libtutti)
