//===- Target.h - Targets, as plugins of ABI 1.1 included them -*- C++ -*-===//
//
// The target interface lives in te/Target/Target.h since plugin ABI 1.2;
// this header keeps plugins written against 1.1 compiling.
//
//===----------------------------------------------------------------------===//

#ifndef TE_PLUGIN_TARGET_H
#define TE_PLUGIN_TARGET_H

#include "te/Target/Target.h"

#endif // TE_PLUGIN_TARGET_H
