// TLS session resumption, connection by connection, against redis-servers with a TLS port only:
// a new connection resumes a session of an earlier one to the same endpoint, never offers it to
// another endpoint (address, port or name) or another client's context, and a server that takes
// the endpoint's place is verified in full. Also: a handshake the server cuts is tried again.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rlock/core/connection.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/stats.hpp"
#include "rlock/core/tls.hpp"
#include "rlock/core/transport.hpp"
#include "test_redis.hpp"

namespace core = rlock::core;
using rlock_test::PrivateRedis;
using rlock_test::TlsServer;

namespace {

std::shared_ptr<const core::TlsContext> context(std::shared_ptr<core::Stats> stats = nullptr) {
  core::TlsConfig config;
  config.enabled = true;
  config.ca_file = rlock_test::tls_cert_dir() + "/ca.crt";
  return core::TlsContext::create(config, std::move(stats));
}

core::Endpoint endpoint(const std::string& host, int port,
                        const std::shared_ptr<const core::TlsContext>& tls) {
  core::Endpoint ep;
  ep.host = host;
  ep.port = port;
  ep.tls = tls;
  return ep;
}

// A connection that has answered a PING: TLS 1.3 tickets come after the handshake, and are read
// with the first reply.
std::unique_ptr<core::Connection> connect(const core::Endpoint& ep) {
  auto conn = std::make_unique<core::Connection>(ep, 5000, 5000);
  EXPECT_EQ(conn->command({"PING"}).str, "PONG");
  return conn;
}

// Connects to `ep` and checks that the handshake was a full one: no session was offered.
void expect_full_handshake(const core::Endpoint& ep, const char* what) {
  SCOPED_TRACE(what);
  auto conn = connect(ep);
  EXPECT_FALSE(conn->tls_offered_session());
  EXPECT_FALSE(conn->tls_resumed_session());
}

TlsServer server_with(const std::string& cert, int port = 0, bool tls12_only = false) {
  TlsServer tls;
  tls.cert = cert;
  tls.port = port;
  tls.tls12_only = tls12_only;
  return tls;
}

TEST(TlsSession, ResumedAtTheSameEndpointOnly) {
  PrivateRedis a(TlsServer{});
  PrivateRedis b(TlsServer{});
  auto stats = std::make_shared<core::Stats>();
  auto tls = context(stats);
  expect_full_handshake(endpoint("127.0.0.1", a.port(), tls), "first");
  auto again = connect(endpoint("127.0.0.1", a.port(), tls));
  EXPECT_TRUE(again->tls_offered_session());
  EXPECT_TRUE(again->tls_resumed_session());

  // Another port, another name for the same server, another client's context: full handshakes,
  // nothing offered.
  expect_full_handshake(endpoint("127.0.0.1", b.port(), tls), "other port");
  expect_full_handshake(endpoint("localhost", a.port(), tls), "other name");
  expect_full_handshake(endpoint("127.0.0.1", a.port(), context()), "other context");

  EXPECT_EQ(stats->tls_handshakes.load(), 4u);
  EXPECT_EQ(stats->tls_resumed.load(), 1u);
}

// TLS 1.3 tickets are used once each, and each resumption brings a new one: a chain of
// reconnects keeps resuming. TLS 1.2 sessions may be resumed again and again.
TEST(TlsSession, EveryReconnectResumesOnTls13AndTls12) {
  for (bool tls12 : {false, true}) {
    SCOPED_TRACE(tls12 ? "TLS 1.2" : "TLS 1.3");
    PrivateRedis server(server_with("server", 0, tls12));
    auto tls = context();
    const core::Endpoint ep = endpoint("127.0.0.1", server.port(), tls);
    connect(ep);
    for (int i = 0; i < 5; ++i) {
      auto conn = connect(ep);
      EXPECT_TRUE(conn->tls_resumed_session()) << "reconnect " << i;
    }
  }
}

// The server is replaced, on the same address and port, by one whose certificate does not name
// the host. The session offered is not its own, so it must do a full handshake, and the client
// must refuse its certificate as it would have without a session.
TEST(TlsSession, ServerTakingTheEndpointIsVerifiedInFull) {
  auto stats = std::make_shared<core::Stats>();
  auto tls = context(stats);
  auto genuine = std::make_unique<PrivateRedis>(TlsServer{});
  const int port = genuine->port();
  const core::Endpoint ep = endpoint("127.0.0.1", port, tls);
  connect(ep);
  ASSERT_TRUE(connect(ep)->tls_resumed_session());
  genuine.reset();
  PrivateRedis impostor(server_with("wrong-name", port));
  try {
    core::Connection conn(ep, 5000, 5000);
    ADD_FAILURE() << "the impostor's certificate was accepted";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::kTls) << e.what();
    EXPECT_NE(std::string(e.what()).find("certificate verify failed"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(stats->tls_handshakes.load(), 2u);
  EXPECT_EQ(stats->tls_resumed.load(), 1u);
}

// A loopback listener that closes the first `cut` connections as soon as their first bytes (a
// ClientHello) arrive, as a CLIENT KILL during the handshake would, and forwards later ones to
// the server at `target`.
class CuttingProxy {
 public:
  CuttingProxy(int target, int cut) : target_(target), cut_(cut) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("cannot listen on loopback");
    }
    port_ = ntohs(addr.sin_port);
    accepting_ = std::thread([this] { accept_loop(); });
  }
  ~CuttingProxy() {
    stop_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    accepting_.join();
    for (std::thread& t : forwarding_) t.join();
    ::close(listener_);
  }
  int port() const { return port_; }
  int cut() const { return done_cut_; }

 private:
  void accept_loop() {
    for (;;) {
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0 || stop_) {
        if (client >= 0) ::close(client);
        return;
      }
      if (done_cut_ < cut_) {
        char buf[512];
        pollfd p{client, POLLIN, 0};
        if (::poll(&p, 1, 5000) > 0) (void)::recv(client, buf, sizeof buf, 0);
        ::close(client);
        ++done_cut_;
        continue;
      }
      forwarding_.emplace_back([this, client] { forward(client); });
    }
  }
  void forward(int client) {
    const int server = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(target_));
    if (::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      char buf[16384];
      while (!stop_ && ::poll(p, 2, 100) >= 0) {
        bool open = true;
        for (int i = 0; i < 2 && open; ++i) {
          if (p[i].revents == 0) continue;
          const ssize_t n = ::recv(p[i].fd, buf, sizeof buf, 0);
          open = n > 0 && ::send(p[1 - i].fd, buf, static_cast<size_t>(n), MSG_NOSIGNAL) == n;
        }
        if (!open) break;
      }
    }
    ::close(server);
    ::close(client);
  }

  int target_;
  int cut_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<int> done_cut_{0};
  std::atomic<bool> stop_{false};
  std::thread accepting_;
  std::vector<std::thread> forwarding_;
};

// Two handshakes in a row cut by the server (killed connections, a restart): the command still
// goes through on a third connection, since nothing had been sent on the two.
TEST(TlsSession, HandshakeCutByTheServerIsTriedAgain) {
  PrivateRedis server(TlsServer{});
  CuttingProxy proxy(server.port(), 2);
  core::ClientConfig config;
  config.endpoint = endpoint("127.0.0.1", proxy.port(), context());
  config.pool_size = 1;
  core::PipelinedTransport transport(config);
  core::Transport& commands = transport;
  EXPECT_EQ(commands.run({"PING"}).str, "PONG");
  EXPECT_EQ(proxy.cut(), 2);
}

}  // namespace
