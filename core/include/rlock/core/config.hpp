// Where and how a client connects, and its timing defaults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rlock::core {

class TlsContext;  // tls.hpp
class Stats;       // stats.hpp
class Events;

// What the parts of one client record and tell (stats.hpp), shared through the config they all
// copy. Filled by Client::create; null stats when the client keeps none.
struct Telemetry {
  std::shared_ptr<Stats> stats;
  std::shared_ptr<Events> events;
};

struct Endpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_path;  // used instead of host/port when not empty
  std::string username;   // empty = default user
  std::string password;
  bool has_password = false;
  int db = 0;
  // Set by Client::create for the servers reached over TLS; null means plaintext.
  std::shared_ptr<const TlsContext> tls;

  std::string describe() const;  // "127.0.0.1:6379" or "unix:/path", for messages
};

// How the deployment is laid out, which decides where each command goes.
enum class Topology {
  Standalone,  // one server: `endpoint`
  Sentinel,    // the master that the sentinels in `seeds` name `master_name`
  Cluster,     // the nodes of a Redis Cluster, learned from `seeds`
};

constexpr int kSentinelPort = 26379;

// sync_replicas: after each acquire and release, WAIT for this many replicas (N > 0), or one of
// these (the same numbers as RLOCK_SYNC_AUTO and RLOCK_SYNC_NEVER in rlock.h and in URLs).
// kSyncAuto waits for one on Sentinel and Cluster deployments whenever the master has a replica
// connected, and never on a lone server.
constexpr int kSyncAuto = 0;
constexpr int kSyncNever = -1;

// The longest lock name a client accepts unless configured otherwise (RLOCK_DEFAULT_MAX_NAME_LEN).
constexpr size_t kDefaultMaxNameLen = 65536;

// How wake-ups travel on a cluster: classic pub/sub (PUBLISH, every node hears it) or sharded
// (SPUBLISH/SSUBSCRIBE on the channel's slot owner, Redis 7+). Auto is sharded on a Redis 7+
// cluster, as Redisson's default, and classic everywhere else.
enum class PubSubMode { Auto, Classic, Sharded };

// How a TLS server's certificate is checked (the values of rlock_tls_verify).
enum class TlsVerify { Full = 0, Ca = 1, None = 2 };
enum class TlsVersion { V1_2 = 0, V1_3 = 1 };
// Sentinel deployments: whether the sentinels are reached over TLS too (rlock_sentinel_tls).
enum class SentinelTls { Auto = 0, On = 1, Off = 2 };

struct TlsConfig {
  bool enabled = false;     // TLS to the data nodes (standalone, the master, cluster nodes)
  std::string ca_file;      // PEM CA bundle; with ca_dir empty too: the system trust store
  std::string ca_dir;       // hashed CA directory
  std::string cert_file;    // client certificate chain, for mutual TLS
  std::string key_file;     // its key; empty: in cert_file
  std::string server_name;  // SNI and verified name; empty: the host connected to
  TlsVerify verify = TlsVerify::Full;
  TlsVersion min_version = TlsVersion::V1_2;
  SentinelTls sentinels = SentinelTls::Auto;  // Auto: like the data nodes

  bool any_setting() const {  // anything beyond the defaults
    return !ca_file.empty() || !ca_dir.empty() || !cert_file.empty() || !key_file.empty() ||
           !server_name.empty() || verify != TlsVerify::Full || min_version != TlsVersion::V1_2 ||
           sentinels != SentinelTls::Auto;
  }
};

struct ClientConfig {
  // Standalone: the server. Otherwise the credentials and database for the data nodes (their
  // addresses come from the sentinels or the cluster).
  Endpoint endpoint;
  Topology topology = Topology::Standalone;
  std::vector<Endpoint> seeds;  // the sentinels (with their own credentials), or cluster nodes
  std::string master_name;      // Sentinel: the monitored master's name
  int sync_replicas = kSyncAuto;
  int64_t sync_timeout_ms = 1000;  // how long WAIT waits for the replicas
  PubSubMode pubsub = PubSubMode::Auto;
  int64_t connect_timeout_ms = 2000;
  int64_t command_timeout_ms = 3000;
  int pool_size = 8;
  int64_t watchdog_lease_ms = 30000;
  int64_t poll_cap_ms = 1000;
  size_t max_name_len = kDefaultMaxNameLen;  // bounds a key: key_prefix + name
  // Put before every name (Redisson's NameMapper as a prefix): the keys and channels of name N
  // are those of key_prefix + N, so services that share a Redis keep apart.
  std::string key_prefix;
  TlsConfig tls;
  bool keep_stats = true;  // RLOCK_STATS_ON
  Telemetry telemetry;
};

// Gives `config` its stats (unless keep_stats is off) and event hook, once.
void attach_telemetry(ClientConfig* config);

// Fills the connection part of `config` (topology, endpoint, seeds, master name, replica sync)
// from a URL; throws Error(kInvalid) naming the bad part:
//   redis://[[user]:password@]host[:port][/db][?db=N]
//   unix://[[user]:password@]/path[?db=N]
//   redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master-name[?db=N]
//     (sentinel port 26379 by default; the credentials are the master's; sentinel_user=U and
//     sentinel_password=P give the sentinels' own)
//   redis-cluster://[[user]:password@]host[:port][,host[:port]...]
// Every form also takes sync_replicas=N|auto|never and sync_timeout_ms=T; redis-cluster:// also
// pubsub=auto|sharded|classic. rediss://, rediss-sentinel:// and rediss-cluster:// are the same
// over TLS and take tls_ca_file, tls_ca_dir, tls_cert_file, tls_key_file, tls_server_name,
// tls_verify=full|ca|none, tls_min_version=1.2|1.3; rediss-sentinel:// also sentinel_tls=yes|no.
void parse_client_url(const std::string& url, ClientConfig* config);

// A single-server URL (redis:// or unix://) as an endpoint; other forms are kInvalid.
Endpoint parse_url(const std::string& url);

constexpr int64_t kMaxDurationMs = int64_t{1} << 53;

// The name a caller gave for the key name `key` (key_prefix taken off); `key` itself when it
// does not start with the prefix.
inline std::string unmapped_name(const ClientConfig& config, const std::string& key) {
  const std::string& prefix = config.key_prefix;
  if (prefix.empty() || key.compare(0, prefix.size(), prefix) != 0) return key;
  return key.substr(prefix.size());
}

constexpr size_t kMaxKeyPrefixLen = 1024;

// Checks a key prefix (at most kMaxKeyPrefixLen bytes, no NUL); throws Error(kInvalid).
void check_key_prefix(const std::string& prefix);

// How long an unlock latch (the result of one release request) is kept: long enough for that
// request's retry to find it.
inline int64_t unlock_latch_ttl_ms(const ClientConfig& config) {
  return config.command_timeout_ms * 2 > 1000 ? config.command_timeout_ms * 2 : 1000;
}

// How long a semaphore request's latch (a plain acquire's grant, a release's result, the
// tombstone of an undone acquire) is kept. Longer than a lock's: a request whose replies were
// lost is settled by a background clean-up that reads the latch, and the renewer retries a
// failed clean-up each second, so it needs many tries' worth of room while Redis is slow or
// away; 30 s covers a short failover or pause. Each latch costs memory for that long
// (docs/semaphores.md).
inline int64_t semaphore_latch_ttl_ms(const ClientConfig& config) {
  return config.command_timeout_ms * 10 > 30000 ? config.command_timeout_ms * 10 : 30000;
}

// When a semaphore clean-up sent at `sent` stops being tried: a few command timeouts before its
// latch can expire, since a latch gone would be read as "never applied". The margin leaves room
// for the clean-up's own send and resend to be answered before the latch's end.
inline int64_t semaphore_cleanup_window_ms(const ClientConfig& config) {
  return semaphore_latch_ttl_ms(config) - 3 * config.command_timeout_ms;
}

}  // namespace rlock::core
