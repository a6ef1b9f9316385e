// rlock::core::parse_url: every accepted form and every rejected one, with the message naming
// the offending part of the URL.
#include <gtest/gtest.h>

#include <string>

#include "rlock/core/config.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/tls.hpp"

namespace rlock::core {
namespace {

// Parses a URL that must be accepted; a rejection fails the test with the library's message.
Endpoint accepted(const std::string& url) {
  try {
    return parse_url(url);
  } catch (const Error& e) {
    ADD_FAILURE() << "parse_url(" << printable(url) << ") rejected: " << e.message();
  }
  return Endpoint{};
}

struct Rejection {
  bool thrown = false;
  int code = kOk;
  std::string message;
};

Rejection rejected(const std::string& url) {
  Rejection r;
  try {
    Endpoint ep = parse_url(url);
    (void)ep;
  } catch (const Error& e) {
    r.thrown = true;
    r.code = e.code();
    r.message = e.message();
  }
  return r;
}

// The URL must be rejected with `code`, and the message must contain `names` (the field).
void expect_rejected(const std::string& url, const std::string& names, int code = kInvalid) {
  SCOPED_TRACE("url " + printable(url));
  Rejection r = rejected(url);
  ASSERT_TRUE(r.thrown) << "accepted, expected a rejection naming \"" << names << "\"";
  EXPECT_EQ(r.code, code) << r.message;
  EXPECT_NE(r.message.find("invalid Redis URL"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(names), std::string::npos)
      << "message does not name \"" << names << "\": " << r.message;
}

// ---- accepted -------------------------------------------------------------------------------

TEST(ParseUrl, HostOnlyGetsDefaults) {
  Endpoint ep = accepted("redis://redis.example.com");
  EXPECT_EQ(ep.host, "redis.example.com");
  EXPECT_EQ(ep.port, 6379);
  EXPECT_EQ(ep.db, 0);
  EXPECT_TRUE(ep.unix_path.empty());
  EXPECT_FALSE(ep.has_password);
  EXPECT_TRUE(ep.username.empty());
  EXPECT_TRUE(ep.password.empty());
}

TEST(ParseUrl, Port) {
  Endpoint ep = accepted("redis://10.1.2.3:6380");
  EXPECT_EQ(ep.host, "10.1.2.3");
  EXPECT_EQ(ep.port, 6380);
  EXPECT_EQ(accepted("redis://h:1").port, 1);
  EXPECT_EQ(accepted("redis://h:65535").port, 65535);
}

TEST(ParseUrl, SchemeIsCaseInsensitiveHostIsKept) {
  Endpoint ep = accepted("REDIS://MyHost:7000");
  EXPECT_EQ(ep.host, "MyHost");
  EXPECT_EQ(ep.port, 7000);
  EXPECT_EQ(accepted("Unix:///tmp/r.sock").unix_path, "/tmp/r.sock");
}

TEST(ParseUrl, DbInPath) {
  Endpoint ep = accepted("redis://h:6390/3");
  EXPECT_EQ(ep.host, "h");
  EXPECT_EQ(ep.port, 6390);
  EXPECT_EQ(ep.db, 3);
  EXPECT_EQ(accepted("redis://h/15").db, 15);
  EXPECT_EQ(accepted("redis://h/0").db, 0);
  EXPECT_EQ(accepted("redis://h/").db, 0);  // empty path: default database
}

TEST(ParseUrl, DbInQuery) {
  Endpoint ep = accepted("redis://h?db=4");
  EXPECT_EQ(ep.host, "h");
  EXPECT_EQ(ep.port, 6379);
  EXPECT_EQ(ep.db, 4);
  Endpoint ep2 = accepted("redis://h:6400?db=9");
  EXPECT_EQ(ep2.port, 6400);
  EXPECT_EQ(ep2.db, 9);
}

TEST(ParseUrl, UserAndPassword) {
  Endpoint ep = accepted("redis://alice:s3cret@h:6381/2");
  EXPECT_TRUE(ep.has_password);
  EXPECT_EQ(ep.username, "alice");
  EXPECT_EQ(ep.password, "s3cret");
  EXPECT_EQ(ep.host, "h");
  EXPECT_EQ(ep.port, 6381);
  EXPECT_EQ(ep.db, 2);
}

TEST(ParseUrl, PasswordOnlyWithColon) {
  Endpoint ep = accepted("redis://:pw@h");
  EXPECT_TRUE(ep.has_password);
  EXPECT_EQ(ep.username, "");
  EXPECT_EQ(ep.password, "pw");
  EXPECT_EQ(ep.host, "h");
}

TEST(ParseUrl, LoneUserinfoIsThePassword) {
  Endpoint ep = accepted("redis://secret@h:6390");
  EXPECT_TRUE(ep.has_password);
  EXPECT_EQ(ep.username, "");
  EXPECT_EQ(ep.password, "secret");
  EXPECT_EQ(ep.host, "h");
  EXPECT_EQ(ep.port, 6390);
}

TEST(ParseUrl, PercentEscapesInUserinfo) {
  Endpoint ep = accepted("redis://us%40er%3a1:p%3Aa%2Fs%25s%40%3f@h");
  EXPECT_EQ(ep.username, "us@er:1");
  EXPECT_EQ(ep.password, "p:a/s%s@?");
  EXPECT_EQ(ep.host, "h");
  // An escaped NUL is a byte like any other (AUTH is binary-safe).
  Endpoint nul = accepted("redis://:a%00b@h");
  EXPECT_EQ(nul.password, std::string("a\0b", 3));
}

TEST(ParseUrl, AtSignsInPasswordUseTheLastOne) {
  Endpoint ep = accepted("redis://u:p@ss@h");
  EXPECT_EQ(ep.username, "u");
  EXPECT_EQ(ep.password, "p@ss");
  EXPECT_EQ(ep.host, "h");
}

TEST(ParseUrl, BracketedIpv6) {
  Endpoint ep = accepted("redis://[::1]:6379");
  EXPECT_EQ(ep.host, "::1");
  EXPECT_EQ(ep.port, 6379);
  Endpoint ep2 = accepted("redis://u:p@[2001:db8::7]/5");
  EXPECT_EQ(ep2.host, "2001:db8::7");
  EXPECT_EQ(ep2.port, 6379);
  EXPECT_EQ(ep2.db, 5);
  EXPECT_EQ(ep2.username, "u");
  EXPECT_EQ(ep2.password, "p");
  EXPECT_EQ(ep.describe(), "[::1]:6379");
}

TEST(ParseUrl, UnixSocketWithDb) {
  Endpoint ep = accepted("unix:///var/run/redis/redis.sock?db=2");
  EXPECT_EQ(ep.unix_path, "/var/run/redis/redis.sock");
  EXPECT_EQ(ep.db, 2);
  EXPECT_FALSE(ep.has_password);
  EXPECT_EQ(ep.describe(), "unix:/var/run/redis/redis.sock");
}

TEST(ParseUrl, UnixSocketWithCredentials) {
  Endpoint ep = accepted("unix://bob:hunter2@/tmp/redis.sock");
  EXPECT_EQ(ep.unix_path, "/tmp/redis.sock");
  EXPECT_TRUE(ep.has_password);
  EXPECT_EQ(ep.username, "bob");
  EXPECT_EQ(ep.password, "hunter2");
  Endpoint lone = accepted("unix://only@/tmp/redis.sock");
  EXPECT_EQ(lone.username, "");
  EXPECT_EQ(lone.password, "only");
  EXPECT_EQ(lone.unix_path, "/tmp/redis.sock");
}

TEST(ParseUrl, UnixSocketPathMayContainAtSign) {
  Endpoint ep = accepted("unix:///tmp/a@b/redis.sock");
  EXPECT_EQ(ep.unix_path, "/tmp/a@b/redis.sock");
  EXPECT_FALSE(ep.has_password);
}

TEST(ParseUrl, UnixSocketPathPercentDecoded) {
  EXPECT_EQ(accepted("unix:///tmp/my%20dir/r.sock").unix_path, "/tmp/my dir/r.sock");
}

TEST(ParseUrl, UnixSocketPathAtTheLengthLimit) {
  std::string path = "/" + std::string(106, 'p');  // 107 bytes: sun_path holds 107 + NUL
  EXPECT_EQ(accepted("unix://" + path).unix_path, path);
}

// ---- rejected -------------------------------------------------------------------------------

TEST(ParseUrlRejects, MissingScheme) {
  expect_rejected("localhost:6379", "missing scheme");
  expect_rejected("", "missing scheme");
  expect_rejected("redis:/h", "missing scheme");
}

TEST(ParseUrlRejects, UnknownScheme) {
  expect_rejected("http://h", "scheme 'http'");
  expect_rejected("tcp://h:6379", "scheme 'tcp'");
  expect_rejected("://h", "scheme ''");
}

// rediss:// is a single-server URL too (the TLS settings are in ClientConfig::tls, below).
TEST(ParseUrl, TlsSchemeIsASingleServer) {
  if (!tls_available()) {
    expect_rejected("rediss://h:6380", "RLOCK_TLS=OFF", kUnsupported);
    return;
  }
  Endpoint ep = accepted("rediss://h:6380");
  EXPECT_EQ(ep.host, "h");
  EXPECT_EQ(ep.port, 6380);
  EXPECT_EQ(accepted("REDISS://h").port, 6379);
}

TEST(ParseUrlRejects, MissingHost) {
  expect_rejected("redis://", "missing host");
  expect_rejected("redis://:6379", "missing host");
  expect_rejected("redis://user:pw@", "missing host");
  expect_rejected("redis:///3", "missing host");
  expect_rejected("redis://?db=1", "missing host");
}

TEST(ParseUrlRejects, BadPort) {
  expect_rejected("redis://h:abc", "port");
  expect_rejected("redis://h:abc", "'abc'");
  expect_rejected("redis://h:", "empty port");
  expect_rejected("redis://[::1]:", "empty port");
  expect_rejected("redis://h:0", "port must be a number from 1 to 65535, got '0'");
  expect_rejected("redis://h:65536", "port must be a number from 1 to 65535, got '65536'");
  expect_rejected("redis://h:-1", "port");
  expect_rejected("redis://h:+80", "port");
  expect_rejected("redis://h:63 79", "port");
  expect_rejected("redis://h:99999999999999999999", "port");
}

TEST(ParseUrlRejects, NonNumericDb) {
  expect_rejected("redis://h/abc", "database must be a number");
  expect_rejected("redis://h/abc", "'abc'");
  expect_rejected("redis://h/-1", "database");
  expect_rejected("redis://h/1/2", "database");
  expect_rejected("redis://h?db=x", "database must be a number");
  expect_rejected("redis://h?db=", "database");
  expect_rejected("unix:///tmp/r.sock?db=two", "database");
}

TEST(ParseUrlRejects, UnbalancedBrackets) {
  expect_rejected("redis://[::1", "unbalanced '['");
  expect_rejected("redis://[::1:6379", "unbalanced '['");
  expect_rejected("redis://::1]:6379", "unbalanced ']'");
  expect_rejected("redis://h]", "unbalanced ']'");
  expect_rejected("redis://[]:6379", "empty IPv6 host");
  expect_rejected("redis://[::1]6379", "after IPv6 host");
}

TEST(ParseUrlRejects, UnbracketedIpv6) {
  expect_rejected("redis://::1:6379", "IPv6 hosts must be in brackets");
  expect_rejected("redis://2001:db8::7", "IPv6 hosts must be in brackets");
}

TEST(ParseUrlRejects, UnknownQueryOption) {
  expect_rejected("redis://h?timeout=5", "unknown option 'timeout'");
  expect_rejected("redis://h?db=1&ssl=true", "unknown option 'ssl'");
  expect_rejected("redis://h?db", "option 'db' has no value");
  expect_rejected("redis://h?sentinel_password=x", "unknown option 'sentinel_password'");
  expect_rejected("unix:///tmp/r.sock?password=x", "unknown option 'password'");
}

TEST(ParseUrlRejects, RelativeOrEmptyUnixPath) {
  expect_rejected("unix://redis.sock", "must be absolute");
  expect_rejected("unix://", "must be absolute");
  expect_rejected("unix://run/redis.sock", "before the socket path");
  expect_rejected("unix:///", "socket path is empty");
  expect_rejected("unix://u:p@/", "socket path is empty");
  expect_rejected("unix:///" + std::string(107, 'p'), "longer than 107 bytes");
}

TEST(ParseUrlRejects, NulByte) {
  expect_rejected(std::string("redis://ho\0st", 13), "NUL byte");
  expect_rejected(std::string("redis://h\0", 10), "NUL byte");
  // Found by fuzz_url: an escaped NUL in a socket path cut the path at connect().
  expect_rejected("unix:///tmp/a%00b.sock", "unix socket path contains a NUL byte");
  // The message shows the URL escaped, not cut at the NUL.
  Rejection r = rejected(std::string("redis://ho\0st", 13));
  EXPECT_NE(r.message.find("ho\\x00st"), std::string::npos) << r.message;
}

TEST(ParseUrlRejects, HostWithWhitespaceOrControlCharacters) {
  expect_rejected("redis://my host", "whitespace or control");
  expect_rejected("redis://h\tx:6379", "whitespace or control");
  expect_rejected("redis://h\x01x", "whitespace or control");
  expect_rejected("redis://h\x7fx", "whitespace or control");  // DEL: found by fuzz_url
}

TEST(ParseUrlRejects, BadPercentEscapes) {
  expect_rejected("redis://:p%zz@h", "bad %-escape in password");
  expect_rejected("redis://:p%4@h", "bad %-escape in password");
  expect_rejected("redis://:p%@h", "bad %-escape in password");
  expect_rejected("redis://u%g1:p@h", "bad %-escape in user name");
  expect_rejected("unix:///tmp/x%2", "bad %-escape in socket path");
}

// Rejection messages end up in logs: they must not carry the credentials of the URL.
TEST(ParseUrlRejects, MessagesDoNotRevealThePassword) {
  const std::string password = "Pa55w0rdXYZ";
  for (const std::string& url :
       {"redis://app:" + password + "@h:notaport", "redis://" + password + "@h/notadb",
        "unix://app:" + password + "@/tmp/r.sock?foo=1"}) {
    Rejection r = rejected(url);
    ASSERT_TRUE(r.thrown) << url;
    EXPECT_EQ(r.message.find(password), std::string::npos)
        << "the password is in the error message: " << r.message;
  }
}

// Found by fuzz_url: a password holding an unescaped '/' was shown whole, and the port or db
// text a message quotes could be a piece of the password.
TEST(ParseUrlRejects, MessagesDoNotRevealAPasswordWithASlash) {
  for (const std::string& url :
       {std::string("redis://:Pa55/w0rdXYZ@h"), std::string("redis://app:Pa55/w0rdXYZ@h:6379/1"),
        std::string("unix://app:Pa55/w0rdXYZ@/tmp/r.sock"), std::string("redis://h/:Pa55w0rdXYZ@x"),
        std::string("redis://app:Pa55w0rdXYZ/@h"), std::string("redis://h?Pa55w0rdXYZ@x=1")}) {
    Rejection r = rejected(url);
    ASSERT_TRUE(r.thrown) << url;
    EXPECT_EQ(r.message.find("Pa55"), std::string::npos)
        << "part of the password is in the error message: " << r.message;
    EXPECT_EQ(r.message.find("w0rdXYZ"), std::string::npos)
        << "part of the password is in the error message: " << r.message;
  }
}

// ---- redis-sentinel://, redis-cluster:// and replica sync -----------------------------------

ClientConfig client_url(const std::string& url) {
  ClientConfig config;
  try {
    parse_client_url(url, &config);
  } catch (const Error& e) {
    ADD_FAILURE() << "parse_client_url(" << printable(url) << ") rejected: " << e.message();
  }
  return config;
}

void expect_client_url_rejected(const std::string& url, const std::string& names) {
  SCOPED_TRACE("url " + printable(url));
  ClientConfig config;
  try {
    parse_client_url(url, &config);
    ADD_FAILURE() << "accepted, expected a rejection naming \"" << names << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kInvalid) << e.message();
    EXPECT_NE(e.message().find(names), std::string::npos) << e.message();
  }
}

TEST(ParseClientUrl, SentinelHostsMasterNameAndDb) {
  ClientConfig c = client_url("redis-sentinel://:pw@s1:5000,[::1],s3/mymaster?db=2");
  EXPECT_EQ(c.topology, Topology::Sentinel);
  EXPECT_EQ(c.master_name, "mymaster");
  ASSERT_EQ(c.seeds.size(), 3u);
  EXPECT_EQ(c.seeds[0].host, "s1");
  EXPECT_EQ(c.seeds[0].port, 5000);
  EXPECT_EQ(c.seeds[1].host, "::1");
  EXPECT_EQ(c.seeds[1].port, kSentinelPort);
  EXPECT_EQ(c.seeds[2].port, kSentinelPort);
  // The credentials and the database are the master's; the sentinels get none.
  EXPECT_TRUE(c.endpoint.has_password);
  EXPECT_EQ(c.endpoint.password, "pw");
  EXPECT_EQ(c.endpoint.db, 2);
  EXPECT_FALSE(c.seeds[0].has_password);
}

TEST(ParseClientUrl, SentinelCredentialsOfTheirOwn) {
  ClientConfig c =
      client_url("redis-sentinel://h/m?sentinel_user=watch&sentinel_password=s%26cret&db=1");
  ASSERT_EQ(c.seeds.size(), 1u);
  EXPECT_TRUE(c.seeds[0].has_password);
  EXPECT_EQ(c.seeds[0].username, "watch");
  EXPECT_EQ(c.seeds[0].password, "s&cret");
  EXPECT_FALSE(c.endpoint.has_password);
}

TEST(ParseClientUrl, ClusterSeedsCarryTheCredentials) {
  ClientConfig c = client_url("redis-cluster://u:p@n1:7000,n2:7001");
  EXPECT_EQ(c.topology, Topology::Cluster);
  ASSERT_EQ(c.seeds.size(), 2u);
  EXPECT_EQ(c.seeds[1].host, "n2");
  EXPECT_EQ(c.seeds[1].port, 7001);
  EXPECT_EQ(c.seeds[1].username, "u");
  EXPECT_EQ(c.seeds[1].password, "p");
}

TEST(ParseClientUrl, SyncOptions) {
  ClientConfig c = client_url("redis://h?sync_replicas=2&sync_timeout_ms=250");
  EXPECT_EQ(c.sync_replicas, 2);
  EXPECT_EQ(c.sync_timeout_ms, 250);
  // The numbers mean what they mean in rlock_client_options: 0 = auto, -1 = never.
  EXPECT_EQ(client_url("redis-sentinel://h/m?sync_replicas=never").sync_replicas, kSyncNever);
  EXPECT_EQ(client_url("redis-sentinel://h/m?sync_replicas=-1").sync_replicas, kSyncNever);
  EXPECT_EQ(client_url("redis-sentinel://h/m?sync_replicas=0").sync_replicas, kSyncAuto);
  EXPECT_EQ(client_url("redis://h?sync_replicas=auto").sync_replicas, kSyncAuto);
  EXPECT_EQ(client_url("redis://h").sync_replicas, kSyncAuto);
}

TEST(ParseClientUrl, PubSubModeOnClusters) {
  EXPECT_EQ(client_url("redis-cluster://h").pubsub, PubSubMode::Auto);
  EXPECT_EQ(client_url("redis-cluster://h?pubsub=sharded").pubsub, PubSubMode::Sharded);
  EXPECT_EQ(client_url("redis-cluster://h?pubsub=classic").pubsub, PubSubMode::Classic);
  expect_client_url_rejected("redis-cluster://h?pubsub=fast",
                             "pubsub must be auto, sharded or classic");
  // Only a cluster has shards: elsewhere the option is unknown.
  expect_client_url_rejected("redis://h?pubsub=sharded", "unknown option 'pubsub'");
}

TEST(ParseClientUrl, Rejections) {
  expect_client_url_rejected("redis-sentinel://h", "missing master name");
  expect_client_url_rejected("redis-sentinel://h/", "missing master name");
  expect_client_url_rejected("redis-sentinel://h/a/b", "one path segment");
  expect_client_url_rejected("redis-sentinel://h,,h2/m", "empty host in the host list");
  expect_client_url_rejected("redis-sentinel://h:0/m", "port must be a number");
  expect_client_url_rejected("redis-sentinel://h/m?sentinel_user=u", "needs sentinel_password");
  expect_client_url_rejected("redis-cluster://h/3", "a cluster has no databases");
  expect_client_url_rejected("redis-cluster://h?db=3", "only database 0");
  expect_client_url_rejected("redis://h?sync_replicas=-2", "sync_replicas must be");
  expect_client_url_rejected("redis://h?sync_timeout_ms=0", "sync_timeout_ms must be");
  // A single-server parse refuses the other forms.
  Rejection r = rejected("redis-sentinel://h/m");
  EXPECT_TRUE(r.thrown);
  EXPECT_NE(r.message.find("single-server URL"), std::string::npos) << r.message;
}

// ---- rediss://, rediss-sentinel://, rediss-cluster:// ------------------------------------------

TEST(ParseClientUrl, TlsSchemesTurnTlsOn) {
  if (!tls_available()) GTEST_SKIP() << "built with RLOCK_TLS=OFF";
  ClientConfig plain = client_url("redis://h");
  EXPECT_FALSE(plain.tls.enabled);
  EXPECT_FALSE(plain.tls.any_setting());

  ClientConfig c = client_url("rediss://u:p@h:6380/2");
  EXPECT_TRUE(c.tls.enabled);
  EXPECT_EQ(c.topology, Topology::Standalone);
  EXPECT_EQ(c.endpoint.host, "h");
  EXPECT_EQ(c.endpoint.port, 6380);
  EXPECT_EQ(c.endpoint.db, 2);
  EXPECT_EQ(c.endpoint.password, "p");
  // Defaults: the system trust store, full verification, TLS 1.2 or newer.
  EXPECT_FALSE(c.tls.any_setting());
  EXPECT_EQ(c.tls.verify, TlsVerify::Full);
  EXPECT_EQ(c.tls.min_version, TlsVersion::V1_2);

  ClientConfig s = client_url("rediss-sentinel://s1,s2:5000/mymaster");
  EXPECT_TRUE(s.tls.enabled);
  EXPECT_EQ(s.topology, Topology::Sentinel);
  EXPECT_EQ(s.master_name, "mymaster");
  ASSERT_EQ(s.seeds.size(), 2u);
  EXPECT_EQ(s.seeds[0].port, kSentinelPort);
  EXPECT_EQ(s.tls.sentinels, SentinelTls::Auto);

  ClientConfig k = client_url("REDISS-CLUSTER://n1:7000,n2:7001");
  EXPECT_TRUE(k.tls.enabled);
  EXPECT_EQ(k.topology, Topology::Cluster);
  ASSERT_EQ(k.seeds.size(), 2u);
  EXPECT_EQ(k.seeds[1].port, 7001);
}

TEST(ParseClientUrl, EachTlsOption) {
  if (!tls_available()) GTEST_SKIP() << "built with RLOCK_TLS=OFF";
  ClientConfig c = client_url(
      "rediss://h?tls_ca_file=/etc/ca%20bundle.pem&tls_ca_dir=/etc/certs&tls_cert_file=/c.pem"
      "&tls_key_file=/k.pem&tls_server_name=redis.example.com&tls_verify=ca"
      "&tls_min_version=1.3");
  EXPECT_EQ(c.tls.ca_file, "/etc/ca bundle.pem");  // percent-decoded
  EXPECT_EQ(c.tls.ca_dir, "/etc/certs");
  EXPECT_EQ(c.tls.cert_file, "/c.pem");
  EXPECT_EQ(c.tls.key_file, "/k.pem");
  EXPECT_EQ(c.tls.server_name, "redis.example.com");
  EXPECT_EQ(c.tls.verify, TlsVerify::Ca);
  EXPECT_EQ(c.tls.min_version, TlsVersion::V1_3);
  EXPECT_TRUE(c.tls.any_setting());

  EXPECT_EQ(client_url("rediss://h?tls_verify=full").tls.verify, TlsVerify::Full);
  EXPECT_EQ(client_url("rediss://h?tls_verify=none").tls.verify, TlsVerify::None);
  EXPECT_EQ(client_url("rediss://h?tls_min_version=1.2").tls.min_version, TlsVersion::V1_2);
  EXPECT_EQ(client_url("rediss-sentinel://h/m?sentinel_tls=yes").tls.sentinels, SentinelTls::On);
  EXPECT_EQ(client_url("rediss-sentinel://h/m?sentinel_tls=no").tls.sentinels, SentinelTls::Off);
  EXPECT_EQ(client_url("rediss-cluster://h?tls_verify=ca").tls.verify, TlsVerify::Ca);
}

TEST(ParseClientUrl, TlsOptionsNeedATlsScheme) {
  expect_client_url_rejected("redis://h?tls_ca_file=/ca.pem", "'tls_ca_file' needs TLS");
  expect_client_url_rejected("redis://h?tls_verify=none", "'tls_verify' needs TLS");
  expect_client_url_rejected("redis-cluster://h?tls_cert_file=/c", "needs TLS: rediss://");
  expect_client_url_rejected("redis-sentinel://h/m?sentinel_tls=no", "'sentinel_tls' needs TLS");
  expect_client_url_rejected("unix:///tmp/r.sock?tls_ca_file=/ca.pem", "needs TLS");
}

TEST(ParseClientUrl, BadTlsValuesAreNamed) {
  if (!tls_available()) GTEST_SKIP() << "built with RLOCK_TLS=OFF";
  expect_client_url_rejected("rediss://h?tls_verify=strict",
                             "tls_verify must be full, ca or none, got 'strict'");
  expect_client_url_rejected("rediss://h?tls_verify=", "tls_verify must be");
  expect_client_url_rejected("rediss://h?tls_min_version=1.1",
                             "tls_min_version must be 1.2 or 1.3, got '1.1'");
  expect_client_url_rejected("rediss://h?tls_min_version=TLSv1.3", "tls_min_version must be");
  expect_client_url_rejected("rediss-sentinel://h/m?sentinel_tls=maybe",
                             "sentinel_tls must be yes or no, got 'maybe'");
  expect_client_url_rejected("rediss://h?tls_ca_file=", "tls_ca_file is empty");
  expect_client_url_rejected("rediss://h?tls_server_name=", "tls_server_name is empty");
  expect_client_url_rejected("rediss://h?tls_cert_file=/a%00b", "tls_cert_file contains a NUL");
  expect_client_url_rejected("rediss://h?tls_cipher=x", "unknown option 'tls_cipher'");
}

TEST(ParseClientUrl, SentinelTlsOnlyWithSentinels) {
  if (!tls_available()) GTEST_SKIP() << "built with RLOCK_TLS=OFF";
  expect_client_url_rejected("rediss-cluster://h?sentinel_tls=no", "unknown option 'sentinel_tls'");
  expect_client_url_rejected("rediss://h?sentinel_tls=yes", "unknown option 'sentinel_tls'");
}

TEST(ParseClientUrl, TlsRejectionsHideThePassword) {
  if (!tls_available()) GTEST_SKIP() << "built with RLOCK_TLS=OFF";
  for (const char* url :
       {"rediss://:S3CRET@h?tls_verify=bogus", "redis://:S3CRET@h?tls_ca_file=/ca.pem",
        "rediss-sentinel://:S3CRET@h/m?sentinel_tls=maybe"}) {
    ClientConfig config;
    try {
      parse_client_url(url, &config);
      ADD_FAILURE() << "accepted " << url;
    } catch (const Error& e) {
      EXPECT_EQ(e.message().find("S3CRET"), std::string::npos) << e.message();
    }
  }
}

TEST(ParseClientUrl, SentinelPasswordIsHiddenInMessages) {
  ClientConfig config;
  try {
    parse_client_url("redis-sentinel://h/m?sentinel_password=hunter2&bogus=1", &config);
    ADD_FAILURE() << "accepted an unknown option";
  } catch (const Error& e) {
    EXPECT_EQ(e.message().find("hunter2"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("bogus"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace rlock::core
