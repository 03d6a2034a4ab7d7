// Whether an HTTP client is still connected, for a request that waits on a generation. cpp-httplib 0.11 does
// not expose the socket, so the server finds it once per request by its addresses (Linux: /proc/self/fd plus
// getsockname/getpeername) and then peeks it: an orderly close or a reset means the client left.
#pragma once

#include <string>

namespace ewgpu::server {

// The socket whose local and peer ports match; -1 if none is found (then only a failed write shows a
// disconnect).
int findConnectionSocket(int local_port, const std::string& remote_addr, int remote_port);
// True once the peer has closed or reset the connection (a non-blocking MSG_PEEK; data waiting is "alive").
bool peerClosed(int fd);

}  // namespace ewgpu::server
