#include "server/connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>

namespace ewgpu::server {
namespace {

// Port and printable address of a socket address (IPv4 or IPv6); port -1 for anything else.
int portOf(const sockaddr_storage& a, std::string* addr) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (a.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
    if (addr) *addr = inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf) ? buf : "";
    return ntohs(in->sin_port);
  }
  if (a.ss_family == AF_INET6) {
    const auto* in = reinterpret_cast<const sockaddr_in6*>(&a);
    if (addr) *addr = inet_ntop(AF_INET6, &in->sin6_addr, buf, sizeof buf) ? buf : "";
    return ntohs(in->sin6_port);
  }
  return -1;
}

}  // namespace

int findConnectionSocket(int local_port, const std::string& remote_addr, int remote_port) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  int found = -1;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd < 0) continue;
    struct stat st {};
    if (fstat((int)fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    if (getsockname((int)fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
    if (getpeername((int)fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    std::string peer_addr;
    if (portOf(local, nullptr) != local_port || portOf(peer, &peer_addr) != remote_port) continue;
    if (peer_addr != remote_addr) continue;
    found = (int)fd;
    break;
  }
  closedir(d);
  return found;
}

bool peerClosed(int fd) {
  if (fd < 0) return false;
  char c;
  const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;
  if (n == 0) return true;
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace ewgpu::server
