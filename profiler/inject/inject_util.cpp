// SPDX-License-Identifier: Apache-2.0
#include "inject_util.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace zb::profiler::inject {

std::string WideToUtf8(const wchar_t* text) {
  std::string out;
  if (text == nullptr) return out;
  for (const wchar_t* p = text; *p != 0; ++p) {
    auto c = static_cast<uint32_t>(*p);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

bool IsLaunchLikeApi(std::string_view name) {
  // Attribute queries, occupancy helpers and graph building mention "Launch"/"Memcpy" without
  // putting work on a device; host functions run no device activity.
  for (std::string_view skip :
       {"Attribute", "Occupancy", "Params", "Node", "GraphExec", "HostFunc", "Config"}) {
    if (name.find(skip) != std::string_view::npos) return false;
  }
  for (std::string_view hit : {"Launch", "Memcpy", "Memset"}) {
    if (name.find(hit) != std::string_view::npos) return true;
  }
  return false;
}

int ClaimRank(const std::string& dir, int32_t rank) {
  const std::string path = dir + "/.rank" + std::to_string(rank) + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);  // the user's alone
  if (fd < 0) return -1;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void WriteWarning(std::string_view message) {
  char line[512];
  constexpr std::string_view kPrefix = "zbkit: ";
  size_t n = 0;
  for (char c : kPrefix)
    line[n++] = c;
  for (char c : message) {
    if (n + 1 >= sizeof(line)) break;
    line[n++] = c == '\n' ? ' ' : c;
  }
  line[n++] = '\n';
  const int saved_errno = errno;  // never disturb the application's errno
  for (size_t done = 0; done < n;) {
    const ssize_t w = ::write(STDERR_FILENO, line + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  errno = saved_errno;
}

int64_t EnvInt64(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  int64_t parsed = 0;
  const char* end = value + std::strlen(value);
  auto [ptr, ec] = std::from_chars(value, end, parsed);
  if (ec != std::errc() || ptr != end) return fallback;
  return parsed;
}

}  // namespace zb::profiler::inject
