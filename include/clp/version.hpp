// clp-transfer: header-only CLP-Transfer embedding initialisation.
// SPDX-License-Identifier: MIT
#pragma once

// The one place the version lives; CMakeLists.txt reads it from here.
#define CLP_VERSION_MAJOR 0
#define CLP_VERSION_MINOR 1
#define CLP_VERSION_PATCH 0

namespace clp {
inline constexpr int version_major = CLP_VERSION_MAJOR;
inline constexpr int version_minor = CLP_VERSION_MINOR;
inline constexpr int version_patch = CLP_VERSION_PATCH;
}  // namespace clp
