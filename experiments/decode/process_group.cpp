#include "decode/process_group.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace hydragen::decode {
namespace {

int env_int(const char* name, bool required, int fallback, int low, int high) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    if (required) throw std::invalid_argument(std::string(name) + " is not set (ranks as processes take RANK and WORLD_SIZE from their launcher)");
    return fallback;
  }
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < low || value > high) {
    throw std::invalid_argument(std::string(name) + "='" + text + "': a whole number in [" + std::to_string(low) + ", " +
                                std::to_string(high) + "]");
  }
  return static_cast<int>(value);
}

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("ranks as processes: " + what + ": " + std::strerror(errno)); }

void send_all(int fd, const void* data, std::size_t bytes, int peer) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n <= 0) fail("sending to rank " + std::to_string(peer));
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

void receive_all(int fd, void* data, std::size_t bytes, int peer) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n == 0) throw std::runtime_error("ranks as processes: rank " + std::to_string(peer) + " closed its connection (it failed or stopped)");
    if (n < 0) fail("receiving from rank " + std::to_string(peer));
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

// A message: its length (8 bytes, this host's order: every rank runs this binary's build), then its bytes.
void send_message(int fd, const std::string& text, int peer) {
  const std::uint64_t length = text.size();
  send_all(fd, &length, sizeof length, peer);
  send_all(fd, text.data(), text.size(), peer);
}

std::string receive_message(int fd, int peer) {
  std::uint64_t length = 0;
  receive_all(fd, &length, sizeof length, peer);
  std::string text(length, '\0');
  receive_all(fd, text.data(), text.size(), peer);
  return text;
}

sockaddr_in address_of(const ProcessRank& me) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(me.master_addr.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    throw std::invalid_argument("MASTER_ADDR='" + me.master_addr + "': not an address or a host name found");
  }
  sockaddr_in a = *reinterpret_cast<sockaddr_in*>(found->ai_addr);
  ::freeaddrinfo(found);
  a.sin_port = htons(static_cast<std::uint16_t>(me.master_port));
  return a;
}

void no_delay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // small messages: no Nagle wait
}

}  // namespace

ProcessRank process_rank_from_env() {
  ProcessRank me;
  me.size = env_int("WORLD_SIZE", true, 1, 1, 1 << 20);
  me.rank = env_int("RANK", true, 0, 0, me.size - 1);
  me.local_rank = env_int("LOCAL_RANK", false, me.rank, 0, 1 << 20);
  me.master_port = env_int("MASTER_PORT", false, me.master_port, 1, 65535);
  if (const char* addr = std::getenv("MASTER_ADDR"); addr != nullptr && *addr != '\0') me.master_addr = addr;
  return me;
}

ProcessGroup::ProcessGroup(const ProcessRank& me, double timeout_s) : me_(me), peers_(static_cast<std::size_t>(me.size), -1) {
  if (me.size < 1 || me.rank < 0 || me.rank >= me.size) {
    throw std::invalid_argument("ranks as processes: rank " + std::to_string(me.rank) + " of " + std::to_string(me.size));
  }
  if (me.size == 1) return;
  const sockaddr_in address = address_of(me);
  const std::string where = me.master_addr + ":" + std::to_string(me.master_port);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  if (me.rank == 0) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) fail("rank 0 listening at " + where);
    if (::listen(listener_, me.size) != 0) fail("rank 0 listening at " + where);
    timeval wait{};  // accept gives up then (EAGAIN): a rank that never comes is an error, not a hang
    wait.tv_sec = static_cast<long>(timeout_s);
    ::setsockopt(listener_, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    for (int accepted = 1; accepted < me.size; ++accepted) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) fail("rank 0 waiting at " + where + " for rank " + std::to_string(accepted) + " of its " + std::to_string(me.size - 1) + " peers");
      no_delay(fd);
      std::int32_t rank = -1;  // each connection says whose it is
      receive_all(fd, &rank, sizeof rank, -1);
      if (rank < 1 || rank >= me.size || peers_[static_cast<std::size_t>(rank)] >= 0) {
        ::close(fd);
        throw std::runtime_error("ranks as processes: a connection at " + where + " says rank " + std::to_string(rank) +
                                 " (taken or out of range for WORLD_SIZE " + std::to_string(me.size) + ")");
      }
      peers_[static_cast<std::size_t>(rank)] = fd;
    }
    return;
  }
  for (;;) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
      no_delay(fd);
      peers_[0] = fd;
      const std::int32_t rank = me.rank;
      send_all(fd, &rank, sizeof rank, 0);
      return;
    }
    const int error = errno;
    ::close(fd);
    if (std::chrono::steady_clock::now() > deadline) {
      errno = error;
      fail("rank " + std::to_string(me.rank) + " connecting to rank 0 at " + where + " for " + std::to_string(static_cast<int>(timeout_s)) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

ProcessGroup::~ProcessGroup() {
  for (int fd : peers_) {
    if (fd >= 0) ::close(fd);
  }
  if (listener_ >= 0) ::close(listener_);
}

std::vector<std::string> ProcessGroup::all_gather(const std::string& mine) {
  std::vector<std::string> all(static_cast<std::size_t>(me_.size));
  if (me_.size == 1) {
    all[0] = mine;
    return all;
  }
  if (me_.rank == 0) {
    all[0] = mine;
    for (int r = 1; r < me_.size; ++r) all[static_cast<std::size_t>(r)] = receive_message(peers_[static_cast<std::size_t>(r)], r);
    for (int r = 1; r < me_.size; ++r) {
      for (const std::string& part : all) send_message(peers_[static_cast<std::size_t>(r)], part, r);
    }
    return all;
  }
  send_message(peers_[0], mine, 0);
  for (std::string& part : all) part = receive_message(peers_[0], 0);
  return all;
}

bool ProcessGroup::all(bool ok) {
  for (const std::string& answer : all_gather(ok ? "1" : "0")) {
    if (answer != "1") return false;
  }
  return true;
}

}  // namespace hydragen::decode
