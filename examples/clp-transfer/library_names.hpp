// The library's basic vocabulary in the program's namespace, as the file layer declares it
// (io/library_names.hpp), so that the program and its file layer name those four alike.
#pragma once

#include "io/library_names.hpp"
