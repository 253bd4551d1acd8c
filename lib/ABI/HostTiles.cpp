//===- HostTiles.cpp - The OS's permission for the host's tile registers --===//

#include "te/ABI/HostTiles.h"

#if defined(__linux__) && defined(__x86_64__)
#include <cerrno>
#include <cstring>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace {

std::optional<std::string> askForTiles() {
#if defined(__linux__) && defined(__x86_64__)
  // <asm/prctl.h>'s values (not in every libc's headers): request the
  // permission for extended state component 18, the tile data.
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXFeatureXTileData = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXFeatureXTileData) == 0)
    return std::nullopt;
  int error = errno;
  std::string reason = "arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) failed: ";
  reason += std::strerror(error);
  // Linux answers EOPNOTSUPP for a processor without AMX's state, EINVAL
  // where it knows no such state (before 5.16).
  if (error == EINVAL || error == EOPNOTSUPP)
    reason += " (the processor or the kernel has no AMX tile state; "
              "Linux 5.16 or later is needed)";
  else if (error == ENOSPC)
    reason += " (an alternate signal stack is too small for the signal "
              "frame with tile state)";
  return reason;
#else
  return std::string("AMX tiles are used on Linux on x86-64 only");
#endif
}

} // namespace

const std::optional<std::string> &te::abi::requestHostTilePermission() {
  static const std::optional<std::string> answer = askForTiles();
  return answer;
}
