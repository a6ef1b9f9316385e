// rlock: the command-line tool. A distributed flock(1): named locks on Redis, shared by every
// process and host that uses the same Redis. Uses only the stable C ABI (rlock/rlock.h), and
// the core's number parser (rlock/core/parse.hpp, linked in statically).

#include <fcntl.h>
#include <pthread.h>
#include <rlock/rlock.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "rlock/core/parse.hpp"

extern char **environ;

namespace {

// sysexits.h values, spelled out so the meaning is next to the number.
constexpr int kExitNotLocked = 1;
constexpr int kExitUsage = 64;        // EX_USAGE
constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE
constexpr int kExitSoftware = 70;     // EX_SOFTWARE
constexpr int kExitLost = 74;         // exec, elect: the lock was lost and COMMAND stopped
constexpr int kExitTempFail = 75;     // EX_TEMPFAIL
constexpr int kExitCannotRun = 126;   // like shells
constexpr int kExitNotFound = 127;    // like shells

constexpr const char *kDefaultUrl = "redis://127.0.0.1:6379";

const char kUsage[] =
    "usage: rlock exec [--url URL] [TLS OPTIONS] [--wait SECONDS] [--lease SECONDS]\n"
    "                  [--on-lost term|kill|ignore] [--kill-after SECONDS]\n"
    "                  [--permits N] NAME -- COMMAND [ARGS...]\n"
    "       rlock elect [--url URL] [TLS OPTIONS] [--wait SECONDS] [--lease SECONDS]\n"
    "                   [--on-lost term|kill] [--kill-after SECONDS] [--term-env VAR]\n"
    "                   NAME -- COMMAND [ARGS...]\n"
    "       rlock status [--url URL] [TLS OPTIONS] [--json] NAME\n"
    "       rlock list [--url URL] [TLS OPTIONS] [--match PATTERN] [--json]\n"
    "       rlock watch [--url URL] [TLS OPTIONS] [--interval SECONDS] NAME\n"
    "       rlock unlock --force [--url URL] [TLS OPTIONS] NAME\n"
    "       rlock --help | --version\n";

const char kHelp[] =
    "\n"
    "A distributed flock(1): named locks on Redis, shared by every process and host that\n"
    "uses the same Redis (and compatible with Redisson's RLock).\n"
    "\n"
    "Commands:\n"
    "  exec     take the lock NAME, run COMMAND while holding it, release it when COMMAND\n"
    "           ends, and exit with COMMAND's exit status. With --permits N, take one of\n"
    "           the N permits of the semaphore NAME instead (a distributed sem(1))\n"
    "  elect    campaign to be the leader of NAME among every 'rlock elect' (and every\n"
    "           program using rlock's leader election) on NAME; once leader, run COMMAND,\n"
    "           stop it the moment leadership is lost, and resign when it ends. Exits\n"
    "           with COMMAND's exit status (docs/leader.md)\n"
    "  status   show whether NAME is locked, its owner (<client-id>:<thread-id>), hold count\n"
    "           and remaining TTL, its kind, fair queue, waiters and fencing token; for a\n"
    "           semaphore its free and held permits and the next lease to end (a plain\n"
    "           semaphore or a latch is shown as a counter: its keys cannot tell)\n"
    "  list     find the locks on the server (every master of a cluster) and show one line\n"
    "           each: NAME, KIND, OWNER(S), HOLDS, TTL, WAITERS, TOKEN. Reads in bounded\n"
    "           steps (SCAN with COUNT), safe on a production server; finds held locks of\n"
    "           rlock and Redisson alike, not free ones, and permit-expirable semaphores\n"
    "           with permits held (OWNER(S) then gives the permits held and free, HOLDS\n"
    "           the permits held, TTL the next lease to end)\n"
    "  watch    show the status of NAME again every --interval until Ctrl-C (or SIGTERM):\n"
    "           redrawn in place on a terminal, else one line per change (owner, holds,\n"
    "           waiters, queue, token; not TTL alone)\n"
    "  unlock   delete the lock NAME whoever holds it (--force is required)\n"
    "\n"
    "Options (before or after NAME; everything after -- belongs to COMMAND):\n"
    "  --url URL        redis://[[user]:password@]host[:port][/db] or\n"
    "                   unix://[[user]:password@]/path/to/socket[?db=N] or\n"
    "                   redis-sentinel://[[user]:password@]host[:port][,host...]/master or\n"
    "                   redis-cluster://[[user]:password@]host[:port][,host...]\n"
    "                   (default: $RLOCK_URL, then redis://127.0.0.1:6379); rediss://,\n"
    "                   rediss-sentinel:// and rediss-cluster:// are the same over TLS\n"
    "  --wait SECONDS   exec: wait at most this long for the lock; 0 = try once. elect:\n"
    "                   campaign at most this long (more than 0)\n"
    "                   (default: wait forever). A --wait above 0 also covers connecting:\n"
    "                   while Redis cannot be reached or is still loading its data, rlock\n"
    "                   keeps trying until the wait runs out (without --wait, or with 0,\n"
    "                   it exits 69 at once; refused credentials always do)\n"
    "  --lease SECONDS  exec: the lock expires this long after it was taken, even if COMMAND\n"
    "                   still runs. Default: no fixed lease; a watchdog renews a 30 s lease\n"
    "                   while COMMAND runs, so if this host dies the lock frees itself\n"
    "                   within 30 s. elect: the leadership's lease, renewed while COMMAND\n"
    "                   runs (default 30): a leader that dies is replaced within it\n"
    "  --permits N      exec: NAME is a semaphore of N permits (Redisson's\n"
    "                   RPermitExpirableSemaphore), made with N permits if it does not\n"
    "                   exist (an existing one keeps its count: rlock warns if it differs);\n"
    "                   at most N commands run at once. --wait and --lease apply to the\n"
    "                   permit as they do to the lock\n"
    "  --term-env VAR   elect: pass the term (the leadership's fencing token, a number that\n"
    "                   grows with every new leader of NAME) to COMMAND in the environment\n"
    "                   variable VAR\n"
    "  --force          unlock: required, since it breaks whoever holds the lock\n"
    "  --match PATTERN  list: only names matching the Redis glob PATTERN (* ? [abc] \\x)\n"
    "  --json           status, list: JSON instead of text: status one object, list one\n"
    "                   object per line (JSON Lines), with the fields name, kind, locked,\n"
    "                   mode, ttl_ms, owner_count, owners [{owner, holds, mode, host,\n"
    "                   pid, command, started_ms, since_ms}] (the last five null when the\n"
    "                   owner's client keeps no holder record), leader ({owner, term} for\n"
    "                   an election's leader, else null),\n"
    "                   queue_length, queue [{owner, deadline_ms}], subscribers, waiters,\n"
    "                   token, permits_available, permits_held, earliest_deadline_ms.\n"
    "                   Bytes of a name or owner that are not UTF-8 appear as\n"
    "                   \\udc80..\\udcff (one per byte, Python's surrogateescape)\n"
    "  --interval SECONDS  watch: time between reads (default: 1)\n"
    "  -h, --help       show this help\n"
    "  --version        show the library version\n"
    "SECONDS may be fractional (0.5).\n"
    "\n"
    "TLS options (with a rediss://, rediss-sentinel:// or rediss-cluster:// URL; the URL's\n"
    "tls_* options say the same, and where both are given they must agree):\n"
    "  --cacert FILE    trust the CA certificates in FILE (PEM) instead of the system's\n"
    "                   (URL: tls_ca_file)\n"
    "  --cacertdir DIR  trust the CA certificates in DIR (hashed, openssl rehash)\n"
    "                   (URL: tls_ca_dir)\n"
    "  --cert FILE      client certificate (PEM), for servers that ask for one\n"
    "                   (URL: tls_cert_file)\n"
    "  --key FILE       its private key (PEM); default: in the --cert file\n"
    "                   (URL: tls_key_file)\n"
    "  --sni NAME       the server name sent and verified, instead of the URL's host\n"
    "                   (URL: tls_server_name)\n"
    "  --insecure       do not verify the server's certificate: encrypted but not\n"
    "                   authenticated (URL: tls_verify=none)\n"
    "\n"
    "exec and signals:\n"
    "  SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to rlock are passed on to\n"
    "  COMMAND (a terminal's Ctrl-C or Ctrl-\\ already reaches both, so it is not sent twice).\n"
    "  While rlock is still waiting for the lock, any of them stops the wait and rlock exits\n"
    "  with 128+signal, holding nothing. Signals ignored when rlock starts stay ignored.\n"
    "\n"
    "exec, elect and lost locks:\n"
    "  If the lock is lost while COMMAND runs (a --lease ran out, Redis could not be reached\n"
    "  to renew it before the lease ran out, or someone ran 'rlock unlock --force'), rlock\n"
    "  acts as soon as it finds out (a renewal every 10 s, or the end of --lease):\n"
    "  --on-lost term   (default) sends COMMAND SIGTERM, then SIGKILL if it still runs\n"
    "                   --kill-after SECONDS later (default 10; 0: at once); exits 74\n"
    "  --on-lost kill   sends COMMAND SIGKILL; exits 74\n"
    "  --on-lost ignore prints a warning; COMMAND runs on, unprotected, and its exit\n"
    "                   status is passed on\n"
    "  A lock lost before COMMAND starts means COMMAND is not run (exit 74).\n"
    "  elect: leadership is the lock NAME, held under a watchdog (a renewal every third of\n"
    "  --lease); losing it acts as --on-lost term (the default) or kill (ignore is refused).\n"
    "  COMMAND dies with rlock: if rlock is killed (even by SIGKILL) the kernel sends\n"
    "  COMMAND SIGKILL, so it never runs on after the lock's lease ends.\n"
    "  If the lock cannot be released at the end (Redis unreachable), rlock warns too; the\n"
    "  lock then expires by its lease.\n"
    "\n"
    "Exit status:\n"
    "  exec, elect  COMMAND's exit status, or 128+N if COMMAND was killed by signal N\n"
    "  0        status, list: done. watch: stopped by Ctrl-C or SIGTERM.\n"
    "           unlock: a lock was deleted\n"
    "  1        unlock: NAME was not locked\n"
    "  64       usage error: unknown command or option, bad value, missing NAME or --\n"
    "  69       Redis unavailable: unreachable, credentials refused, TLS failed (handshake or\n"
    "           certificate verification: rlock says why), or it refused the request\n"
    "  70       internal error\n"
    "  74       exec, elect: the lock (leadership) was lost; COMMAND was stopped (--on-lost term "
    "or kill) or\n"
    "           not started\n"
    "  75       exec: the lock was busy (or every permit taken) and --wait ran out.\n"
    "           elect: not leader when --wait ran out\n"
    "  126      exec, elect: COMMAND was found but could not be run\n"
    "  127      exec, elect: COMMAND was not found\n"
    "  128+N    exec, elect: rlock got signal N while still waiting for the lock\n";

// A bad command line: main prints the message and the usage and exits 64.
struct UsageError {
  std::string message;
};

struct Args {
  std::string command;  // exec, status, unlock
  std::string url;
  bool has_name = false;
  std::string name;
  int64_t wait_ms = RLOCK_WAIT_FOREVER;
  int64_t lease_ms = RLOCK_LEASE_WATCHDOG;
  bool force = false;
  bool help = false;
  std::string match;           // list
  bool json = false;           // status, list
  int64_t interval_ms = 1000;  // watch
  // TLS settings (rlock_client_options version 3); empty = not given.
  std::string ca_file, ca_dir, cert_file, key_file, server_name;
  bool insecure = false;
  std::vector<char *> argv;       // exec: COMMAND [ARGS...]
  int64_t permits = 0;            // exec: > 0 takes a permit of a semaphore of this many
  std::string on_lost = "term";   // exec: what a lost lock does to COMMAND: term, kill, ignore
  int64_t kill_after_ms = 10000;  // exec: SIGKILL this long after --on-lost term's SIGTERM
  std::string term_env;           // elect: the environment variable that gets the term
};

// Plain decimal seconds only ("5", "0.5"): no sign, blank, "nan", "inf", hex or exponent.
int64_t parse_seconds(const std::string &option, const std::string &text, bool allow_zero) {
  if (text.empty()) throw UsageError{option + " needs a number of seconds, got ''"};
  if (text[0] == '-') throw UsageError{option + " must not be negative, got '" + text + "'"};
  int64_t ms = 0;
  switch (rlock::core::parse_decimal(text, 3, RLOCK_MAX_DURATION_MS, &ms)) {
    case rlock::core::ParseStatus::kOk:
      break;
    case rlock::core::ParseStatus::kMalformed:
      throw UsageError{option + " needs a number of seconds (like 5 or 0.5), got '" + text + "'"};
    case rlock::core::ParseStatus::kOutOfRange:
      throw UsageError{option + " is too large: '" + text + "' (at most " +
                       std::to_string(RLOCK_MAX_DURATION_MS / 1000) + " seconds)"};
  }
  // A tiny positive value must not become "0" (try once, or no lease at all).
  if (ms == 0 && text.find_first_of("123456789") != std::string::npos) ms = 1;
  if (ms == 0 && !allow_zero) {
    throw UsageError{option + " must be more than 0, got '" + text + "'"};
  }
  return ms;
}

void set_url(Args &args, const std::string &value) {
  if (value.empty()) throw UsageError{"option --url needs a value, got ''"};
  args.url = value;
}
void set_wait(Args &args, const std::string &value) {
  args.wait_ms = parse_seconds("--wait", value, true);
}
void set_lease(Args &args, const std::string &value) {
  args.lease_ms = parse_seconds("--lease", value, false);
}
void set_permits(Args &args, const std::string &value) {
  int64_t n = 0;
  bool digits = !value.empty() && value.size() <= 10;
  for (char c : value) digits = digits && c >= '0' && c <= '9';
  if (digits) n = std::stoll(value);
  if (!digits || n < 1 || n > 2147483647) {
    throw UsageError{"--permits needs a whole number from 1 to 2147483647, got '" + value + "'"};
  }
  args.permits = n;
}
void set_on_lost(Args &args, const std::string &value) {
  if (value != "term" && value != "kill" && value != "ignore") {
    throw UsageError{"--on-lost must be term, kill or ignore, got '" + value + "'"};
  }
  args.on_lost = value;
}
void set_kill_after(Args &args, const std::string &value) {
  args.kill_after_ms = parse_seconds("--kill-after", value, true);
}
void set_term_env(Args &args, const std::string &value) {
  bool valid = !value.empty() && !(value[0] >= '0' && value[0] <= '9');
  for (char c : value) {
    valid = valid && (c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                      (c >= '0' && c <= '9'));
  }
  if (!valid) {
    throw UsageError{
        "--term-env needs an environment variable name (letters, digits and _, "
        "not starting with a digit), got '" +
        value + "'"};
  }
  args.term_env = value;
}
void set_force(Args &args, const std::string &) { args.force = true; }
void set_match(Args &args, const std::string &value) {
  if (value.empty()) throw UsageError{"option --match needs a value, got ''"};
  args.match = value;
}
void set_json(Args &args, const std::string &) { args.json = true; }
void set_interval(Args &args, const std::string &value) {
  args.interval_ms = parse_seconds("--interval", value, false);
}

// A path or name option: the value as given, never empty.
void set_text(std::string *field, const char *option, const std::string &value) {
  if (value.empty()) throw UsageError{std::string("option ") + option + " needs a value, got ''"};
  *field = value;
}
void set_cacert(Args &args, const std::string &value) {
  set_text(&args.ca_file, "--cacert", value);
}
void set_cacertdir(Args &args, const std::string &value) {
  set_text(&args.ca_dir, "--cacertdir", value);
}
void set_cert(Args &args, const std::string &value) { set_text(&args.cert_file, "--cert", value); }
void set_key(Args &args, const std::string &value) { set_text(&args.key_file, "--key", value); }
void set_sni(Args &args, const std::string &value) { set_text(&args.server_name, "--sni", value); }
void set_insecure(Args &args, const std::string &) { args.insecure = true; }

// The options: which commands take each, and what it sets.
struct Option {
  const char *name;
  const char *commands;  // the commands it is valid for, space-separated
  bool takes_value;
  void (*set)(Args &args, const std::string &value);
};

#define RLOCK_CLI_ALL "exec elect status unlock list watch"
const Option kOptions[] = {
    {"--url", RLOCK_CLI_ALL, true, set_url},
    {"--wait", "exec elect", true, set_wait},
    {"--lease", "exec elect", true, set_lease},
    {"--permits", "exec", true, set_permits},
    {"--on-lost", "exec elect", true, set_on_lost},
    {"--kill-after", "exec elect", true, set_kill_after},
    {"--term-env", "elect", true, set_term_env},
    {"--force", "unlock", false, set_force},
    {"--match", "list", true, set_match},
    {"--json", "status list", false, set_json},
    {"--interval", "watch", true, set_interval},
    {"--cacert", RLOCK_CLI_ALL, true, set_cacert},
    {"--cacertdir", RLOCK_CLI_ALL, true, set_cacertdir},
    {"--cert", RLOCK_CLI_ALL, true, set_cert},
    {"--key", RLOCK_CLI_ALL, true, set_key},
    {"--sni", RLOCK_CLI_ALL, true, set_sni},
    {"--insecure", RLOCK_CLI_ALL, false, set_insecure},
};
#undef RLOCK_CLI_ALL

const Option *find_option(const std::string &name) {
  for (const Option &option : kOptions) {
    if (name == option.name) return &option;
  }
  return nullptr;
}

bool valid_for(const Option &option, const std::string &command) {
  return (std::string(" ") + option.commands + " ").find(" " + command + " ") != std::string::npos;
}

// Reads argv[1], the command. False when there is nothing more to read (--help, --version).
bool parse_command(int argc, char **argv, Args &args) {
  if (argc < 2) throw UsageError{"missing command (exec, elect, status, unlock, list or watch)"};
  args.command = argv[1];
  if (args.command == "-h" || args.command == "--help" || args.command == "help") {
    args.help = true;
    return false;
  }
  if (args.command == "--version") return false;
  if (args.command != "exec" && args.command != "elect" && args.command != "status" &&
      args.command != "unlock" && args.command != "list" && args.command != "watch") {
    if (!args.command.empty() && args.command[0] == '-') {
      throw UsageError{"unknown option '" + args.command + "' (expected a command first)"};
    }
    throw UsageError{"unknown command '" + args.command + "'"};
  }
  return true;
}

// Reads the option at argv[i] ("--name value" or "--name=value"); returns the index of its last
// argument.
int parse_option(int argc, char **argv, int i, Args &args) {
  std::string name = argv[i], value;
  const size_t eq = name.find('=');
  const bool inline_value = name.compare(0, 2, "--") == 0 && eq != std::string::npos;
  if (inline_value) {
    value = name.substr(eq + 1);
    name.resize(eq);
  }
  const Option *option = find_option(name);
  if (option == nullptr) throw UsageError{"unknown option '" + name + "'"};
  if (!valid_for(*option, args.command)) {
    throw UsageError{"option " + name + " is not valid for '" + args.command + "'"};
  }
  if (!option->takes_value && inline_value) {
    throw UsageError{"option " + name + " takes no value"};
  }
  if (option->takes_value && !inline_value) {
    if (i + 1 >= argc) throw UsageError{"option " + name + " needs a value"};
    value = argv[++i];
  }
  option->set(args, value);
  return i;
}

void set_name(Args &args, const std::string &arg) {
  if (args.has_name || args.command == "list") {
    throw UsageError{args.command == "exec" || args.command == "elect"
                         ? "unexpected argument '" + arg + "': missing '--' before the command?"
                         : "unexpected argument '" + arg + "'"};
  }
  args.has_name = true;
  args.name = arg;
}

// What follows "--" (`rest`, `count` arguments): exec's COMMAND, or for status and unlock a
// NAME, which may then start with '-'.
void parse_after_separator(bool saw_separator, int count, char **rest, Args &args) {
  if (args.command == "exec" || args.command == "elect") {
    if (!saw_separator) {
      throw UsageError{args.has_name ? "missing '--' before the command" : "missing lock NAME"};
    }
    args.argv.assign(rest, rest + count);
    if (args.argv.empty()) throw UsageError{"missing command after '--'"};
    args.argv.push_back(nullptr);
    return;
  }
  for (int i = 0; i < count; ++i) {
    if (args.has_name || args.command == "list")
      throw UsageError{std::string("unexpected argument '") + rest[i] + "'"};
    args.has_name = true;
    args.name = rest[i];
  }
}

// The first TLS option given, or nullptr.
const char *first_tls_option(const Args &args) {
  if (!args.ca_file.empty()) return "--cacert";
  if (!args.ca_dir.empty()) return "--cacertdir";
  if (!args.cert_file.empty()) return "--cert";
  if (!args.key_file.empty()) return "--key";
  if (!args.server_name.empty()) return "--sni";
  if (args.insecure) return "--insecure";
  return nullptr;
}

// TLS options need a TLS URL; said here in the options' own names (the library would name
// the tls_* fields).
void check_tls_options(const Args &args) {
  const char *option = first_tls_option(args);
  if (option == nullptr) return;
  std::string scheme = args.url.substr(0, args.url.find("://"));
  for (char &c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme.compare(0, 6, "rediss") != 0) {
    throw UsageError{std::string("option ") + option +
                     " needs a TLS URL: rediss://, rediss-sentinel:// or rediss-cluster://"};
  }
  if (!args.key_file.empty() && args.cert_file.empty()) {
    throw UsageError{"option --key needs --cert (the client certificate it belongs to)"};
  }
}

// The checks on the whole command line, and the default URL.
void check_complete(Args &args) {
  if (args.command != "list") {
    if (!args.has_name) throw UsageError{"missing lock NAME"};
    if (args.name.empty()) throw UsageError{"the lock NAME is empty"};
  }
  if (args.command == "elect") {
    if (args.on_lost == "ignore") {
      throw UsageError{
          "--on-lost ignore is not for elect: a command that outlives its "
          "leadership is what elect exists to prevent"};
    }
    if (args.wait_ms == 0) throw UsageError{"elect: --wait must be more than 0"};
  }
  if (args.command == "unlock" && !args.force) {
    throw UsageError{"unlock needs --force (it deletes the lock whoever holds it)"};
  }
  if (args.url.empty()) {  // --url "" was refused: empty means not given
    const char *env = std::getenv("RLOCK_URL");
    args.url = (env && *env) ? env : kDefaultUrl;
  }
  check_tls_options(args);
}

Args parse_args(int argc, char **argv) {
  Args args;
  if (!parse_command(argc, argv, args)) return args;
  bool saw_separator = false;
  int i = 2;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      saw_separator = true;
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      args.help = true;
      return args;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      i = parse_option(argc, argv, i, args);
    } else {
      set_name(args, arg);
    }
  }
  parse_after_separator(saw_separator, argc - i, argv + i, args);
  check_complete(args);
  return args;
}

// ---- Library errors -------------------------------------------------------------------------

int exit_code_for(int rc) {
  switch (rc) {
    case RLOCK_EINVAL:  // only user input reaches the library: a bad URL or too long a name
      return kExitUsage;
    case RLOCK_ECONN:
    case RLOCK_EAUTH:
    case RLOCK_ENOPERM:
    case RLOCK_EUNSUPPORTED:
    case RLOCK_EREDIS:
    case RLOCK_EOOM:
    case RLOCK_EBUSY:
    case RLOCK_EREADONLY:
    case RLOCK_ETLS:  // like refused credentials: the server cannot be used as configured
      return kExitUnavailable;
    default:
      return kExitSoftware;
  }
}

// Prints the library's message for the failure `rc` of the last call on this thread (it names
// the lock and the server; the URL is not repeated since it may hold a password) and returns
// the exit code for it.
int report(int rc, const char *prefix = "") {
  const rlock_error_info *info = rlock_last_error();
  const char *message = (info->code == rc && info->message[0]) ? info->message : rlock_strerror(rc);
  std::fprintf(stderr, "rlock: %s%s\n", prefix, message);
  return exit_code_for(rc);
}

// Owners are "<uuid>:<number>", but they come from Redis: show anything unprintable escaped.
std::string printable(const char *data, size_t len) {
  std::string out;
  for (size_t i = 0; i < len; ++i) {
    unsigned char c = static_cast<unsigned char>(data[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// Owns a client and a lock handle; frees them in the right order.
struct Session {
  rlock_client *client = nullptr;
  rlock_lock *lock = nullptr;
  rlock_semaphore *semaphore = nullptr;  // exec --permits
  rlock_permit_id permit{};              // the one it holds
  rlock_election *election = nullptr;    // elect
  ~Session() {
    rlock_election_free(election);
    rlock_semaphore_free(semaphore);
    rlock_lock_free(lock);
    rlock_client_free(client);
  }
};

const char *or_null(const std::string &text) { return text.empty() ? nullptr : text.c_str(); }

// The client of --url and the TLS options (the library checks that they fit the URL).
int new_client(const Args &args, rlock_client **out) {
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = args.url.c_str();
  opts.tls_ca_file = or_null(args.ca_file);
  opts.tls_ca_dir = or_null(args.ca_dir);
  opts.tls_cert_file = or_null(args.cert_file);
  opts.tls_key_file = or_null(args.key_file);
  opts.tls_server_name = or_null(args.server_name);
  if (args.insecure) opts.tls_verify = RLOCK_TLS_VERIFY_NONE;
  // elect: --lease is the leadership's lease, which the watchdog renews.
  if (args.command == "elect" && args.lease_ms > 0) opts.watchdog_lease_ms = args.lease_ms;
  return rlock_client_new(out, &opts);
}

// Connects and makes the lock handle; returns 0 or the exit code after printing the error.
int open_session(const Args &args, Session &session) {
  int rc = new_client(args, &session.client);
  if (rc != RLOCK_OK) return report(rc);
  rc = rlock_lock_new(&session.lock, session.client, args.name.c_str(), nullptr);
  if (rc != RLOCK_OK) return report(rc);
  return 0;
}

// ---- status / list / watch: what the inspection calls read ------------------------------------

struct InfoFree {
  void operator()(rlock_lock_info *info) const { rlock_lock_info_free(info); }
};
using InfoPtr = std::unique_ptr<rlock_lock_info, InfoFree>;

const char *kind_name(rlock_found_kind kind) {
  switch (kind) {
    case RLOCK_FOUND_REENTRANT:
      return "reentrant";
    case RLOCK_FOUND_FENCED:
      return "fenced";
    case RLOCK_FOUND_FAIR:
      return "fair";
    case RLOCK_FOUND_READ_WRITE:
      return "read-write";
    case RLOCK_FOUND_NOT_A_LOCK:
      return "not-a-lock";
    case RLOCK_FOUND_SEMAPHORE:
      return "semaphore";
    case RLOCK_FOUND_COUNTER:
      return "counter";
    default:
      return "none";
  }
}

const char *mode_name(rlock_lock_mode mode) {
  return mode == RLOCK_MODE_READ ? "read" : mode == RLOCK_MODE_WRITE ? "write" : nullptr;
}

// Who waits: a fair lock's queue, else the clients subscribed to the wake-up channel.
int64_t waiters_of(const rlock_lock_info &info) {
  return info.kind == RLOCK_FOUND_FAIR ? info.queue_length : info.subscribers;
}

// The length of the well-formed UTF-8 sequence at `s` (of `left` bytes), or 0 if none starts
// there (overlong forms, surrogates and code points above U+10FFFF are not well-formed).
size_t utf8_sequence(const unsigned char *s, size_t left) {
  const unsigned char c = s[0];
  size_t len;
  unsigned lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (left < len || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    if (s[i] < 0x80 || s[i] > 0xbf) return 0;
  }
  return len;
}

// A JSON string of arbitrary bytes: UTF-8 as it is, and each byte that is not part of
// well-formed UTF-8 as the escape \udcXX (a lone low surrogate, Python's "surrogateescape"),
// which no well-formed text produces, so the bytes can be recovered exactly.
std::string json_string(const char *data, size_t len) {
  std::string out = "\"";
  const auto *bytes = reinterpret_cast<const unsigned char *>(data);
  char buf[8];
  for (size_t i = 0; i < len;) {
    const unsigned char c = bytes[i];
    const size_t n = utf8_sequence(bytes + i, len - i);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\udc%02x", c);
      out += buf;
      ++i;
    } else if (n > 1) {
      out.append(data + i, n);
      i += n;
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      ++i;
    } else {
      out += static_cast<char>(c);
      ++i;
    }
  }
  return out + "\"";
}

std::string json_mode(rlock_lock_mode mode) {
  const char *name = mode_name(mode);
  return name ? std::string("\"") + name + "\"" : "null";
}

// The holder record of owners[i]; null when the library gave none (an older one) or none exists.
const rlock_holder_info *holder_of(const rlock_lock_info &info, size_t i) {
  if (info.version < 3 || i >= info.holders_len || !info.holders[i].known) return nullptr;
  return &info.holders[i];
}

// An election's leader: rlock's candidates own the name's fenced lock with owner numbers from
// 2^50 up, which no thread id reaches (docs/leader.md).
bool is_leader(const rlock_lock_info &info) {
  if (info.kind != RLOCK_FOUND_FENCED || !info.locked || info.owners_len == 0) return false;
  const std::string owner(info.owners[0].owner, info.owners[0].owner_len);
  const size_t colon = owner.find(':');
  if (colon == std::string::npos) return false;
  errno = 0;
  const long long thread = std::strtoll(owner.c_str() + colon + 1, nullptr, 10);
  return errno == 0 && thread >= (1LL << 50);
}

std::string holder_json(const rlock_lock_info &info, size_t i) {
  const rlock_holder_info *h = holder_of(info, i);
  if (h == nullptr) {
    return ",\"host\":null,\"pid\":null,\"command\":null,\"started_ms\":null,\"since_ms\":null";
  }
  return ",\"host\":" + json_string(h->host, std::strlen(h->host)) +
         ",\"pid\":" + std::to_string(h->pid) +
         ",\"command\":" + json_string(h->command, std::strlen(h->command)) +
         ",\"started_ms\":" + std::to_string(h->started_ms) +
         ",\"since_ms\":" + (h->since_ms >= 0 ? std::to_string(h->since_ms) : std::string("null"));
}

// One lock as a JSON object on one line (the fields --help lists).
std::string lock_json(const rlock_lock_info &info) {
  std::string out = "{\"name\":" + json_string(info.name, info.name_len);
  out += ",\"kind\":\"" + std::string(kind_name(info.kind)) + "\"";
  out += std::string(",\"locked\":") + (info.locked ? "true" : "false");
  out += ",\"mode\":" + json_mode(info.mode);
  out += ",\"ttl_ms\":" + std::to_string(info.ttl_ms);
  out += ",\"owner_count\":" + std::to_string(info.owner_count);
  out += ",\"owners\":[";
  for (size_t i = 0; i < info.owners_len; ++i) {
    const rlock_lock_owner &owner = info.owners[i];
    if (i > 0) out += ",";
    out += "{\"owner\":" + json_string(owner.owner, owner.owner_len) +
           ",\"holds\":" + std::to_string(owner.hold_count) + ",\"mode\":" + json_mode(owner.mode) +
           holder_json(info, i) + "}";
  }
  out += "],\"leader\":";
  if (is_leader(info)) {
    out += "{\"owner\":" + json_string(info.owners[0].owner, info.owners[0].owner_len) +
           ",\"term\":" + std::to_string(info.token) + "}";
  } else {
    out += "null";
  }
  out += ",\"queue_length\":" + std::to_string(info.queue_length);
  out += ",\"queue\":[";
  for (size_t i = 0; i < info.queue_len; ++i) {
    const rlock_lock_waiter &waiter = info.queue[i];
    if (i > 0) out += ",";
    out += "{\"owner\":" + json_string(waiter.owner, waiter.owner_len) +
           ",\"deadline_ms\":" + std::to_string(waiter.deadline_ms) + "}";
  }
  out += "],\"subscribers\":" + std::to_string(info.subscribers);
  out += ",\"waiters\":" + std::to_string(waiters_of(info));
  out += ",\"token\":" + std::to_string(info.token);
  out += ",\"permits_available\":" + std::to_string(info.permits_available);
  out += ",\"permits_held\":" + std::to_string(info.permits_held);
  out += ",\"earliest_deadline_ms\":" + std::to_string(info.earliest_deadline_ms) + "}";
  return out;
}

int64_t now_epoch_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ttl_text(int64_t ttl_ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f s", static_cast<double>(ttl_ms) / 1000.0);
  return buf;
}

bool is_semaphore(const rlock_lock_info &info) {
  return info.kind == RLOCK_FOUND_SEMAPHORE || info.kind == RLOCK_FOUND_COUNTER;
}

// When a semaphore's next lease ends, from now: "none" when no permit has a lease.
std::string lease_left_text(const rlock_lock_info &info) {
  if (info.earliest_deadline_ms < 0) return "none";
  const int64_t left = info.earliest_deadline_ms - now_epoch_ms();
  return left >= 0 ? ttl_text(left) : "lapsed";
}

// The semaphore lines of `rlock status`.
std::string semaphore_text(const rlock_lock_info &info) {
  if (info.kind == RLOCK_FOUND_COUNTER) {
    return "value: " + std::to_string(info.permits_available) +
           " (a plain semaphore's free permits, a latch's count, or another counter)\n";
  }
  std::string out = "permits free: " + std::to_string(info.permits_available) + "\n";
  out += "permits held: " + std::to_string(info.permits_held) + "\n";
  const std::string left = lease_left_text(info);
  out += "next lease ends: " +
         (left == "none"     ? "none (no permit has a lease)"
          : left == "lapsed" ? "lapsed (given back at the next acquire or release)"
                             : "in " + left) +
         "\n";
  return out;
}

// "host, pid N".
std::string holder_place(const rlock_holder_info &h) {
  return printable(h.host, std::strlen(h.host)) + ", pid " + std::to_string(h.pid);
}

// "1h02m", "3m05s", "12.3 s": how long ago an epoch-ms time was.
std::string age_text(int64_t since_ms) {
  const int64_t ms = std::max<int64_t>(0, now_epoch_ms() - since_ms);
  char buf[64];
  if (ms < 60000) {
    std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  } else if (ms < 3600000) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(ms / 60000),
                  static_cast<long long>(ms / 1000 % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(ms / 3600000),
                  static_cast<long long>(ms / 60000 % 60));
  }
  return buf;
}

// An epoch-ms time as UTC ISO 8601.
std::string utc_time(int64_t epoch_ms) {
  const std::time_t seconds = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(epoch_ms % 1000));
  return buf;
}

// `rlock status`'s lines on who holds owners[i] and since when.
std::string holder_lines(const rlock_lock_info &info, size_t i) {
  const rlock_holder_info *h = holder_of(info, i);
  if (h == nullptr) {
    return "held by: unknown (no rlock holder record: a Redisson client, an owner id, or a "
           "record the server refused)\n";
  }
  std::string out = "held by: " + holder_place(*h) + "\n";
  if (*h->command) out += "command: " + printable(h->command, std::strlen(h->command)) + "\n";
  out += "since: ";
  out += h->since_ms >= 0 ? utc_time(h->since_ms) + " (" + age_text(h->since_ms) + " ago)"
                          : std::string("not listed yet (holds are listed from one second on)");
  return out + "\n";
}

// The text of `rlock status`: today's lines first (name, locked, owner, hold count, owners,
// ttl), then what the inspection adds. A name with no keys keeps its two lines.
std::string status_text(const rlock_lock_info &info) {
  std::string out = "name: " + std::string(info.name, info.name_len) + "\n";
  out += std::string("locked: ") + (info.locked ? "yes" : "no") + "\n";
  if (info.locked) {
    if (info.owners_len > 0) {
      out += "owner: " + printable(info.owners[0].owner, info.owners[0].owner_len) + "\n";
      out += "hold count: " + std::to_string(info.owners[0].hold_count) + "\n";
      out += holder_lines(info, 0);
    }
    if (info.owner_count != 1) out += "owners: " + std::to_string(info.owner_count) + "\n";
    out += "ttl: " + (info.ttl_ms >= 0 ? ttl_text(info.ttl_ms) : "none (no expiry)") + "\n";
  }
  if (info.kind == RLOCK_FOUND_NOTHING) return out;
  out += std::string("kind: ") + kind_name(info.kind) + "\n";
  if (mode_name(info.mode)) out += std::string("mode: ") + mode_name(info.mode) + "\n";
  for (size_t i = 1; i < info.owners_len; ++i) {
    out += "also held by: " + printable(info.owners[i].owner, info.owners[i].owner_len) +
           " (hold count " + std::to_string(info.owners[i].hold_count) + ")";
    if (const rlock_holder_info *h = holder_of(info, i)) out += " on " + holder_place(*h);
    out += "\n";
  }
  if (info.owner_count > static_cast<int64_t>(info.owners_len)) {
    out += "owners not shown: " +
           std::to_string(info.owner_count - static_cast<int64_t>(info.owners_len)) + "\n";
  }
  if (info.kind == RLOCK_FOUND_NOT_A_LOCK) return out;
  if (is_semaphore(info)) {
    out += semaphore_text(info);
    out += "waiters: " + std::to_string(waiters_of(info)) + "\n";
    return out + "subscribers: " + std::to_string(info.subscribers) + "\n";
  }
  if (info.kind == RLOCK_FOUND_FAIR) {
    out += "queue: " + std::to_string(info.queue_length) + "\n";
    const int64_t now = now_epoch_ms();
    for (size_t i = 0; i < info.queue_len; ++i) {
      const rlock_lock_waiter &waiter = info.queue[i];
      out += "queued: " + printable(waiter.owner, waiter.owner_len);
      if (waiter.deadline_ms >= 0)
        out += " (place kept " + ttl_text(waiter.deadline_ms - now) + ")";
      out += "\n";
    }
  }
  out += "waiters: " + std::to_string(waiters_of(info)) + "\n";
  out += "subscribers: " + std::to_string(info.subscribers) + "\n";
  out += "token: " + std::to_string(info.token) + "\n";
  if (is_leader(info)) out += "leader term: " + std::to_string(info.token) + "\n";
  return out;
}

// Reads NAME's keys; nullptr after printing the error (`*code` is then the exit code).
InfoPtr inspect_name(rlock_client *client, const std::string &name, int *code) {
  rlock_lock_info *info = nullptr;
  int rc = rlock_inspect(&info, client, name.data(), name.size());
  if (rc != RLOCK_OK) {
    *code = report(rc);
    return nullptr;
  }
  return InfoPtr(info);
}

int run_status(const Args &args) {
  Session session;
  int rc = new_client(args, &session.client);
  if (rc != RLOCK_OK) return report(rc);
  int code = 0;
  InfoPtr info = inspect_name(session.client, args.name, &code);
  if (!info) return code;
  if (args.json) {
    std::printf("%s\n", lock_json(*info).c_str());
  } else {
    std::fputs(status_text(*info).c_str(), stdout);
  }
  return std::fflush(stdout) == 0 ? 0 : kExitSoftware;
}

// Table columns grow to fit what they have shown so far, so rows print page by page.
struct Table {
  size_t name = 4, kind = 4, owners = 8, holds = 5, ttl = 3, waiters = 7, holder = 7;
  bool header_done = false;
};

struct Row {
  std::string name, kind, owners, holds, ttl, waiters, holder, token;
};

Row row_of(const rlock_lock_info &info) {
  Row row;
  row.name = printable(info.name, info.name_len);
  row.kind = kind_name(info.kind);
  if (info.kind == RLOCK_FOUND_READ_WRITE && mode_name(info.mode)) {
    row.kind += std::string("/") + mode_name(info.mode);
  }
  if (info.owners_len == 0) {
    row.owners = "-";
  } else {
    row.owners = printable(info.owners[0].owner, info.owners[0].owner_len);
    if (info.owner_count > 1) row.owners += " +" + std::to_string(info.owner_count - 1);
  }
  int64_t holds = 0;
  for (size_t i = 0; i < info.owners_len; ++i) holds += info.owners[i].hold_count;
  row.holds = info.owners_len ? std::to_string(holds) : "-";
  row.ttl = !info.locked ? "-" : info.ttl_ms >= 0 ? ttl_text(info.ttl_ms) : "none";
  row.waiters = std::to_string(waiters_of(info));
  row.token = info.token ? std::to_string(info.token) : "-";
  if (is_leader(info)) row.token += " (leader)";
  row.holder = "-";
  if (const rlock_holder_info *h = holder_of(info, 0)) {
    row.holder = holder_place(*h);
    if (h->since_ms >= 0) row.holder += ", for " + age_text(h->since_ms);
  }
  if (is_semaphore(info)) {
    row.owners = "permits: " + std::to_string(info.permits_held) + " held, " +
                 std::to_string(info.permits_available) + " free";
    row.holds = std::to_string(info.permits_held);
    row.ttl = info.kind == RLOCK_FOUND_SEMAPHORE ? lease_left_text(info) : "-";
  }
  return row;
}

void print_rows(Table &table, const std::vector<Row> &rows) {
  for (const Row &r : rows) {
    table.name = std::max(table.name, r.name.size());
    table.kind = std::max(table.kind, r.kind.size());
    table.owners = std::max(table.owners, r.owners.size());
    table.holds = std::max(table.holds, r.holds.size());
    table.ttl = std::max(table.ttl, r.ttl.size());
    table.waiters = std::max(table.waiters, r.waiters.size());
    table.holder = std::max(table.holder, r.holder.size());
  }
  auto line = [&](const Row &r) {
    std::printf("%-*s  %-*s  %-*s  %*s  %*s  %*s  %-*s  %s\n", static_cast<int>(table.name),
                r.name.c_str(), static_cast<int>(table.kind), r.kind.c_str(),
                static_cast<int>(table.owners), r.owners.c_str(), static_cast<int>(table.holds),
                r.holds.c_str(), static_cast<int>(table.ttl), r.ttl.c_str(),
                static_cast<int>(table.waiters), r.waiters.c_str(), static_cast<int>(table.holder),
                r.holder.c_str(), r.token.c_str());
  };
  if (!table.header_done && !rows.empty()) {
    line({"NAME", "KIND", "OWNER(S)", "HOLDS", "TTL", "WAITERS", "HELD BY", "TOKEN"});
    table.header_done = true;
  }
  for (const Row &r : rows) line(r);
}

struct PageFree {
  void operator()(rlock_lock_page *page) const { rlock_lock_page_free(page); }
};

int run_list(const Args &args) {
  Session session;
  int rc = new_client(args, &session.client);
  if (rc != RLOCK_OK) return report(rc);
  Table table;
  std::string cursor = "0";
  size_t found = 0;
  // SCAN may return a key twice while Redis resizes its table: each name is shown once.
  std::unordered_set<std::string> shown;
  for (;;) {
    rlock_scan_options opts = RLOCK_SCAN_OPTIONS_INIT;
    opts.match = args.match.empty() ? nullptr : args.match.data();
    opts.match_len = args.match.size();
    opts.cursor = cursor.c_str();
    rlock_lock_page *raw = nullptr;
    rc = rlock_scan_locks(&raw, session.client, &opts);
    if (rc != RLOCK_OK) return report(rc);
    std::unique_ptr<rlock_lock_page, PageFree> page(raw);
    std::vector<Row> rows;
    for (size_t i = 0; i < page->count; ++i) {
      const rlock_lock_info &info = *page->locks[i];
      if (!shown.emplace(info.name, info.name_len).second) continue;
      ++found;
      if (args.json) {
        std::printf("%s\n", lock_json(info).c_str());
      } else {
        rows.push_back(row_of(info));
      }
    }
    print_rows(table, rows);
    if (page->done) break;
    cursor = page->next_cursor;
  }
  if (!args.json && found == 0) std::fprintf(stderr, "rlock: no locks found\n");
  return std::fflush(stdout) == 0 ? 0 : kExitSoftware;
}

// What a change is for `watch` without a terminal: everything but the TTL and a semaphore's next
// deadline, which always move.
std::string watch_key(const rlock_lock_info &info) {
  std::string json = lock_json(info);
  const std::string ttl = ",\"ttl_ms\":" + std::to_string(info.ttl_ms);
  json.erase(json.find(ttl), ttl.size());
  // A semaphore's next deadline moves with every renewal, as a lock's TTL does.
  const std::string deadline =
      ",\"earliest_deadline_ms\":" + std::to_string(info.earliest_deadline_ms);
  json.erase(json.find(deadline), deadline.size());
  return json;
}

std::string utc_time_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

// One line: "<time> locked by OWNER (hold count N), owners N, ttl T, waiters W, token K".
std::string watch_line(const rlock_lock_info &info) {
  std::string out = utc_time_now() + " " + printable(info.name, info.name_len) + ": ";
  if (!info.locked) {
    out += "not locked";
  } else {
    out += "locked";
    if (info.owners_len > 0) {
      out += " by " + printable(info.owners[0].owner, info.owners[0].owner_len) + " (hold count " +
             std::to_string(info.owners[0].hold_count) + ")";
      if (const rlock_holder_info *h = holder_of(info, 0)) out += " on " + holder_place(*h);
    }
    if (info.owner_count != 1) out += ", owners " + std::to_string(info.owner_count);
    out += ", ttl " + (info.ttl_ms >= 0 ? ttl_text(info.ttl_ms) : std::string("none"));
  }
  if (info.kind != RLOCK_FOUND_NOTHING) out += std::string(", kind ") + kind_name(info.kind);
  if (mode_name(info.mode)) out += std::string(", mode ") + mode_name(info.mode);
  out += ", waiters " + std::to_string(waiters_of(info));
  if (info.kind == RLOCK_FOUND_FAIR) out += ", queue " + std::to_string(info.queue_length);
  if (info.token) out += ", token " + std::to_string(info.token);
  if (info.kind == RLOCK_FOUND_SEMAPHORE) {
    out += ", permits held " + std::to_string(info.permits_held) + ", free " +
           std::to_string(info.permits_available);
  } else if (info.kind == RLOCK_FOUND_COUNTER) {
    out += ", value " + std::to_string(info.permits_available);
  }
  return out + "\n";
}

int run_watch(const Args &args) {
  // SIGINT and SIGTERM end the watch: blocked in every thread (the library's inherit the mask)
  // and taken between reads by sigtimedwait, which is also the pause.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  Session session;
  int rc = new_client(args, &session.client);
  if (rc != RLOCK_OK) return report(rc);
  const bool terminal = isatty(STDOUT_FILENO) != 0;
  std::string last_key;
  bool failing = false;
  for (;;) {
    rlock_lock_info *raw = nullptr;
    rc = rlock_inspect(&raw, session.client, args.name.data(), args.name.size());
    if (rc == RLOCK_OK) {
      InfoPtr info(raw);
      failing = false;
      if (terminal) {
        std::printf("\x1b[H\x1b[2J%s  (every %s; Ctrl-C to stop)\n\n%s", utc_time_now().c_str(),
                    ttl_text(args.interval_ms).c_str(), status_text(*info).c_str());
      } else {
        std::string key = watch_key(*info);
        if (key != last_key) std::fputs(watch_line(*info).c_str(), stdout);
        last_key = std::move(key);
      }
      std::fflush(stdout);
    } else if (exit_code_for(rc) != kExitUnavailable) {
      return report(rc);
    } else if (!failing) {  // Redis away for a while: said once, tried again every interval
      report(rc, "watch: ");
      failing = true;
      last_key.clear();
    }
    const struct timespec pause = {static_cast<time_t>(args.interval_ms / 1000),
                                   static_cast<long>(args.interval_ms % 1000) * 1000000L};
    int sig;
    while ((sig = sigtimedwait(&stop, nullptr, &pause)) < 0 && errno == EINTR) {
    }
    if (sig == SIGINT || sig == SIGTERM) return 0;
  }
}

// ---- unlock -----------------------------------------------------------------------------------

int run_unlock(const Args &args) {
  Session session;
  if (int code = open_session(args, session)) return code;
  int deleted = 0;
  int rc = rlock_force_unlock(&deleted, session.lock);
  if (rc != RLOCK_OK) return report(rc);
  if (deleted) {
    std::printf("unlocked: '%s' was locked and has been deleted\n", args.name.c_str());
    return 0;
  }
  std::printf("not locked: '%s' was not locked, nothing deleted\n", args.name.c_str());
  return kExitNotLocked;
}

// ---- exec -----------------------------------------------------------------------------------

const int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

const char *signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    default:
      return "a signal";
  }
}

// Shared between the main thread and the signal thread. Leaked on purpose: the signal thread
// is detached and may still look at it while the process exits.
struct SignalState {
  std::mutex mu;
  pid_t child = 0;                  // > 0 while COMMAND runs: signals are forwarded to it
  bool done = false;                // COMMAND ended (or never will start): signals are dropped
  int stop_signal = 0;              // a signal that came before COMMAND started
  std::condition_variable stopped;  // notified when stop_signal is set
  rlock_cancel_token *token = nullptr;
  sigset_t watched;
  bool lock_lost = false;         // the lock was lost: COMMAND must not start (or was told to stop)
  bool stopped_for_lost = false;  // --on-lost term or kill signalled COMMAND
  // elect: the campaign's outcome, told by the election's callbacks (notifying `stopped`).
  int64_t term = 0;            // > 0 once leader
  bool campaign_over = false;  // ended without leadership: campaign_error says why
  int campaign_error = 0;
  std::string campaign_message;
};

// Library calls are not async-signal-safe, so signals stay blocked in every thread and this
// thread takes them with sigwaitinfo, as ordinary events.
void signal_thread(SignalState *state) {
  for (;;) {
    siginfo_t info;
    int sig = sigwaitinfo(&state->watched, &info);
    if (sig < 0) {
      if (errno == EINTR) continue;
      return;  // nothing to wait for
    }
    std::lock_guard<std::mutex> guard(state->mu);
    if (state->child > 0) {
      // Ctrl-C / Ctrl-\ from the terminal went to the whole foreground process group, which
      // COMMAND shares with us: it already has it.
      bool from_tty = info.si_code == SI_KERNEL && (sig == SIGINT || sig == SIGQUIT);
      if (!from_tty) kill(state->child, sig);
    } else if (!state->done) {
      if (!state->stop_signal) state->stop_signal = sig;
      // The token (unlike rlock_cancel) also stops an acquire that has not started waiting yet.
      rlock_cancel_token_cancel(state->token);
      state->stopped.notify_all();
    }
  }
}

struct LostNotice {
  std::string name;
  std::string what = "the lock";  // what was lost: "the lock", "leadership of"
  std::string mode;               // --on-lost
  int64_t kill_after_ms = 0;
  SignalState *signals = nullptr;
  std::atomic<bool> reported{false};
};

// --on-lost term: SIGKILL after --kill-after unless COMMAND ended. The pid stays valid while
// signals->child holds it (wait_command clears it before reaping).
void kill_after(SignalState *signals, pid_t pid, int64_t ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  std::lock_guard<std::mutex> guard(signals->mu);
  if (signals->child == pid) {
    std::fprintf(stderr, "rlock: the command did not end within --kill-after %g s; sent SIGKILL\n",
                 static_cast<double>(ms) / 1000.0);
    kill(pid, SIGKILL);
  }
}

// Runs on the library's watchdog thread: says so, and stops COMMAND as --on-lost asks. The
// watchdog reports a loss before the lease lapses (or once the key is gone), so COMMAND is
// told before another holder can get the lock.
void stop_for_loss(LostNotice *notice, const char *why) {
  SignalState *signals = notice->signals;
  std::lock_guard<std::mutex> guard(signals->mu);
  signals->lock_lost = true;
  if (signals->child <= 0) return;  // not started (start_command says so) or already ended
  notice->reported = true;
  if (notice->mode == "ignore") {
    std::fprintf(stderr,
                 "rlock: warning: lost %s '%s' while the command is still running (%s); "
                 "the command is no longer protected by it (--on-lost ignore)\n",
                 notice->what.c_str(), notice->name.c_str(), why);
    return;
  }
  const bool term = notice->mode == "term";
  std::fprintf(stderr, "rlock: lost %s '%s' while the command was running (%s); sent it %s\n",
               notice->what.c_str(), notice->name.c_str(), why, term ? "SIGTERM" : "SIGKILL");
  signals->stopped_for_lost = true;
  kill(signals->child, term ? SIGTERM : SIGKILL);
  if (term) std::thread(kill_after, signals, signals->child, notice->kill_after_ms).detach();
}

void on_lost(rlock_lock *, const char *, size_t, int64_t, rlock_lost_reason reason, void *payload) {
  const char *why = reason == RLOCK_LOST_EXPIRED       ? "its --lease ran out"
                    : reason == RLOCK_LOST_UNREACHABLE ? "Redis could not be reached to renew it"
                                                       : "it was deleted or taken by another owner";
  stop_for_loss(static_cast<LostNotice *>(payload), why);
}

int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitSoftware;
}

std::string seconds_text(int64_t ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(ms) / 1000.0);
  return buf;
}

// Blocks the forwarded signals before any thread exists, so every thread (ours and the
// library's) inherits the mask and only the signal thread receives them. A signal ignored at
// start (nohup, background jobs of scripts) stays ignored, for us and for COMMAND. Returns 0,
// or the exit code after printing the error.
int start_signal_thread(SignalState **out, sigset_t *original_mask) {
  auto *signals = new SignalState;
  sigemptyset(&signals->watched);
  for (int sig : kForwarded) {
    struct sigaction current;
    if (sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    sigaddset(&signals->watched, sig);
  }
  pthread_sigmask(SIG_BLOCK, &signals->watched, original_mask);
  signal(SIGCHLD, SIG_DFL);  // an inherited SIG_IGN would make the child unwaitable

  int rc = rlock_cancel_token_new(&signals->token);
  if (rc != RLOCK_OK) return report(rc);
  std::thread(signal_thread, signals).detach();
  *out = signals;
  return 0;
}

// Ends signal handling before the token goes away: from now on signals are dropped. Returns
// the signal that came while no COMMAND ran, if any.
int stop_signal_handling(SignalState *signals) {
  std::lock_guard<std::mutex> guard(signals->mu);
  signals->child = 0;
  signals->done = true;
  return signals->stop_signal;
}

int finish(SignalState *signals, int code) {
  stop_signal_handling(signals);
  return code;
}

// Ends a wait that a signal stopped; its exit code after saying so.
int stopped_by_signal(const Args &args, SignalState *signals) {
  int sig = stop_signal_handling(signals);
  std::fprintf(stderr, "rlock: got %s while waiting for lock '%s'; the command was not run\n",
               signal_name(sig), args.name.c_str());
  return 128 + sig;
}

// A failure to connect that may pass by itself: no server listening yet (starting or
// restarting), one that answers LOADING while it reads its data, or BUSY, MASTERDOWN,
// CLUSTERDOWN or too many clients. Credentials, TLS, permissions and a bad URL or database do not
// pass by waiting.
bool may_pass(int rc) { return rc == RLOCK_ECONN || rc == RLOCK_EBUSY || rc == RLOCK_EREDIS; }

// Connects for exec. Within a bounded --wait, a failure that may pass is tried again (50 ms,
// doubling to 1 s) until the wait runs out; `wait_left_ms` is then what the lock may still
// wait. Returns 0, or the exit code after printing why not.
int connect_for_exec(const Args &args, Session &session, SignalState *signals,
                     int64_t *wait_left_ms) {
  using Clock = std::chrono::steady_clock;
  const bool bounded = args.wait_ms > 0;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(args.wait_ms);
  int64_t pause_ms = 50;
  int tries = 0;
  for (;;) {
    ++tries;
    int rc = new_client(args, &session.client);
    if (rc == RLOCK_OK) break;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!bounded || !may_pass(rc) || left.count() <= 0) {
      if (tries == 1) return report(rc);
      const std::string prefix = "tried to connect for --wait " + seconds_text(args.wait_ms) +
                                 " (" + std::to_string(tries) + " tries): ";
      return report(rc, prefix.c_str());
    }
    std::unique_lock<std::mutex> guard(signals->mu);
    if (signals->stopped.wait_for(guard, std::min(left, std::chrono::milliseconds(pause_ms)),
                                  [signals] { return signals->stop_signal != 0; })) {
      guard.unlock();
      return stopped_by_signal(args, signals);
    }
    pause_ms = std::min<int64_t>(pause_ms * 2, 1000);
  }
  *wait_left_ms = args.wait_ms;
  if (bounded) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    *wait_left_ms = std::max<int64_t>(0, left.count());  // 0: one try, the wait is spent
  }
  if (args.command == "elect") {
    rlock_election_options opts = RLOCK_ELECTION_OPTIONS_INIT;
    opts.requeue = 0;  // one leadership: COMMAND runs once
    int rc = rlock_election_new(&session.election, session.client, args.name.data(),
                                args.name.size(), &opts);
    return rc == RLOCK_OK ? 0 : report(rc);
  }
  if (args.permits > 0) {
    rlock_semaphore_options opts = RLOCK_SEMAPHORE_OPTIONS_INIT;
    opts.kind = RLOCK_SEMAPHORE_EXPIRABLE;
    int rc = rlock_semaphore_new(&session.semaphore, session.client, args.name.c_str(), &opts);
    return rc == RLOCK_OK ? 0 : report(rc);
  }
  int rc = rlock_lock_new(&session.lock, session.client, args.name.c_str(), nullptr);
  return rc == RLOCK_OK ? 0 : report(rc);
}

// Makes the semaphore with --permits permits unless it exists; warns when an existing one has
// another number of permits in all (its creator's count stands). Returns 0 or the exit code.
int set_up_semaphore(const Args &args, const Session &session) {
  int set = 0;
  int rc = rlock_semaphore_try_set_permits(&set, session.semaphore, args.permits, 0);
  if (rc != RLOCK_OK) return report(rc);
  if (set) return 0;
  int64_t available = 0, held = 0;
  int exists = 0;
  rc = rlock_semaphore_available(&available, &held, &exists, session.semaphore);
  if (rc != RLOCK_OK) return report(rc);
  const int64_t total = available + held;
  if (exists && total != args.permits) {
    std::fprintf(stderr,
                 "rlock: warning: semaphore '%s' exists with %lld permits in all, not --permits "
                 "%lld; its own count applies\n",
                 args.name.c_str(), static_cast<long long>(total),
                 static_cast<long long>(args.permits));
  }
  return 0;
}

// Takes one permit of the semaphore for COMMAND, as acquire_for_exec takes the lock.
int take_permit_for_exec(const Args &args, Session &session, SignalState *signals,
                         int64_t wait_ms) {
  if (int code = set_up_semaphore(args, session)) return finish(signals, code);
  rlock_permit_options acquire = RLOCK_PERMIT_OPTIONS_INIT;
  acquire.wait_ms = wait_ms;
  acquire.lease_ms = args.lease_ms;
  acquire.cancel = signals->token;
  acquire.ids = &session.permit;
  int rc = rlock_semaphore_acquire_ex(session.semaphore, &acquire);
  if (rc == RLOCK_OK) return 0;
  if (rc == RLOCK_ETIMEDOUT) {
    if (args.wait_ms == 0) {
      std::fprintf(stderr, "rlock: every permit of semaphore '%s' is taken (--wait 0)\n",
                   args.name.c_str());
    } else {
      std::fprintf(stderr, "rlock: every permit of semaphore '%s' is still taken after --wait %s\n",
                   args.name.c_str(), seconds_text(args.wait_ms).c_str());
    }
    return finish(signals, kExitTempFail);
  }
  if (rc != RLOCK_ECANCELED) return finish(signals, report(rc));
  if (!stop_signal_handling(signals)) return report(rc);
  return stopped_by_signal(args, signals);
}

// Takes the lock for COMMAND, waiting at most `wait_ms` (what is left of --wait). Returns 0, or
// the exit code after printing why not.
int acquire_for_exec(const Args &args, const Session &session, SignalState *signals,
                     int64_t wait_ms) {
  rlock_acquire_options acquire = RLOCK_ACQUIRE_OPTIONS_INIT;
  acquire.wait_ms = wait_ms;
  acquire.lease_ms = args.lease_ms;
  acquire.cancel = signals->token;
  int rc = rlock_acquire_ex(session.lock, &acquire);
  if (rc == RLOCK_OK) return 0;
  if (rc == RLOCK_ETIMEDOUT) {
    if (args.wait_ms == 0) {
      std::fprintf(stderr, "rlock: lock '%s' is held by someone else (--wait 0)\n",
                   args.name.c_str());
    } else {
      std::fprintf(stderr, "rlock: lock '%s' is still held by someone else after --wait %s\n",
                   args.name.c_str(), seconds_text(args.wait_ms).c_str());
    }
    return finish(signals, kExitTempFail);
  }
  if (rc != RLOCK_ECANCELED) return finish(signals, report(rc));
  if (!stop_signal_handling(signals)) return report(rc);
  return stopped_by_signal(args, signals);
}

// The file execve runs for COMMAND: argv[0] itself when it has a '/', else the first
// executable of that name on $PATH (as execvp searches; an empty $PATH entry is the current
// directory). Empty, with an errno in *error, when there is none.
std::string find_command(const char *name, int *error) {
  *error = ENOENT;
  if (*name == '\0') return "";
  if (std::strchr(name, '/')) {
    if (access(name, X_OK) == 0) return name;
    *error = errno;
    return "";
  }
  const char *path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t begin = 0;
  for (;;) {
    size_t end = dirs.find(':', begin);
    std::string dir =
        dirs.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (errno == EACCES) *error = EACCES;  // found but not runnable, unless a later one is
    if (end == std::string::npos) return "";
    begin = end + 1;
  }
}

// Starts COMMAND with the signal mask and dispositions it should have, and with a parent-death
// signal: if rlock itself dies (SIGKILL, a crash) the kernel kills COMMAND, which would
// otherwise run on unprotected once the lock expires. fork, not posix_spawn, which cannot set
// it. Returns 0 or an errno (from finding or running COMMAND).
int spawn(const Args &args, const SignalState &signals, const sigset_t &original_mask,
          char *const *envp, pid_t *pid) {
  int error = 0;
  const std::string file = find_command(args.argv[0], &error);
  if (file.empty()) return error;
  int report_pipe[2];
  if (pipe2(report_pipe, O_CLOEXEC) != 0) return errno;
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    error = errno;
    close(report_pipe[0]);
    close(report_pipe[1]);
    return error;
  }
  if (child == 0) {
    // Only async-signal-safe calls here: other threads held locks when we forked. The signal
    // goes when the forking thread ends: the main thread, which lives until rlock exits.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(kExitSoftware);
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig : kForwarded) {
      if (sigismember(&signals.watched, sig)) sigaction(sig, &dfl, nullptr);
    }
    sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    execve(file.c_str(), args.argv.data(), envp);
    error = errno;
    ssize_t ignored = write(report_pipe[1], &error, sizeof error);
    (void)ignored;
    _exit(kExitCannotRun);
  }
  close(report_pipe[1]);
  ssize_t n;
  while ((n = read(report_pipe[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  close(report_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof error)) {  // execve failed: reap the child
    while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    return error;
  }
  *pid = child;
  return 0;
}

// Starts COMMAND unless a signal came first. Returns 0 once it runs, or the exit code after
// printing why it does not.
int start_command(const Args &args, SignalState *signals, const sigset_t &original_mask, pid_t *pid,
                  char *const *envp = environ) {
  int spawn_error = 0;
  int stop_signal = 0;
  bool lost = false;
  {
    // Holding the mutex while spawning: a signal arriving now waits until the child's pid
    // is known and is then forwarded; one that came already means "do not start".
    std::lock_guard<std::mutex> guard(signals->mu);
    stop_signal = signals->stop_signal;
    lost = signals->lock_lost;
    if (!stop_signal && !lost) {
      spawn_error = spawn(args, *signals, original_mask, envp, pid);
      if (spawn_error == 0) signals->child = *pid;
    }
    if (stop_signal || lost || spawn_error) signals->done = true;
  }
  if (lost && !stop_signal) {
    std::fprintf(stderr, "rlock: lost %s '%s' before the command started; it was not run\n",
                 args.command == "elect" ? "leadership of" : "the lock", args.name.c_str());
    return kExitLost;
  }
  if (stop_signal) {
    std::fprintf(stderr, "rlock: got %s before the command started; it was not run\n",
                 signal_name(stop_signal));
    return 128 + stop_signal;
  }
  if (spawn_error) {
    std::fprintf(stderr, "rlock: %s: %s\n", args.argv[0], std::strerror(spawn_error));
    return (spawn_error == ENOENT || spawn_error == ENOTDIR) ? kExitNotFound : kExitCannotRun;
  }
  return 0;
}

// Waits for COMMAND to end; its exit status as ours.
int wait_command(pid_t pid, SignalState *signals) {
  // Wait without reaping first, so the signal thread never signals a recycled pid.
  siginfo_t info;
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  stop_signal_handling(signals);  // from now on a lost lock no longer signals COMMAND
  bool stopped_for_lost = false;
  {
    std::lock_guard<std::mutex> guard(signals->mu);
    stopped_for_lost = signals->stopped_for_lost;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return stopped_for_lost ? kExitLost : exit_status_of(status);
}

// Gives the permit back after COMMAND; warns if it was lost or could not be given back.
void release_permit_after_exec(const Args &args, const Session &session) {
  int rc = rlock_permit_release(session.semaphore, session.permit.hex);
  if (rc == RLOCK_ELOST || rc == RLOCK_ENOTHELD) {
    std::fprintf(stderr,
                 "rlock: warning: the permit of semaphore '%s' was lost before the command "
                 "ended (its lease ran out, or the semaphore was deleted); the command was not "
                 "fully protected by it\n",
                 args.name.c_str());
  } else if (rc != RLOCK_OK) {
    report(rc, "warning: the permit was not given back, it will expire by its lease: ");
  }
}

// Releases the lock after COMMAND; warns if it was lost or could not be released.
void release_after_exec(const Args &args, const Session &session, const LostNotice &notice) {
  int rc = rlock_release(session.lock);
  if (rc == RLOCK_ELOST) {
    if (!notice.reported) {
      std::fprintf(stderr,
                   "rlock: warning: the lock '%s' was lost before the command ended (it "
                   "expired or was deleted); the command was not fully protected by it\n",
                   args.name.c_str());
    }
  } else if (rc != RLOCK_OK) {
    report(rc, "warning: the lock was not released, it will expire by its lease: ");
  }
}

int run_exec(const Args &args) {
  SignalState *signals = nullptr;
  sigset_t original_mask;
  if (int code = start_signal_thread(&signals, &original_mask)) return code;

  LostNotice notice;
  notice.name = args.name;
  notice.mode = args.on_lost;
  notice.kill_after_ms = args.kill_after_ms;
  notice.signals = signals;
  int code = 0;
  {
    Session session;
    int64_t wait_ms = args.wait_ms;
    if ((code = connect_for_exec(args, session, signals, &wait_ms))) return finish(signals, code);
    if (args.permits > 0) {
      if ((code = take_permit_for_exec(args, session, signals, wait_ms))) return code;
    } else {
      rlock_lock_set_lost_callback(session.lock, on_lost, &notice);
      if ((code = acquire_for_exec(args, session, signals, wait_ms))) return code;
    }
    pid_t pid = 0;
    code = start_command(args, signals, original_mask, &pid);
    if (code == 0) code = wait_command(pid, signals);
    if (args.permits > 0) {
      release_permit_after_exec(args, session);
    } else {
      release_after_exec(args, session, notice);
    }
  }  // frees the lock handle (waiting for a running lost callback) and the client
  stop_signal_handling(signals);
  rlock_cancel_token_free(signals->token);
  signals->token = nullptr;
  return code;
}

// ---- elect ----------------------------------------------------------------------------------

struct Campaign {
  SignalState *signals = nullptr;
  LostNotice *notice = nullptr;
};

void on_elected(rlock_election *, int64_t term, void *payload) {
  SignalState *signals = static_cast<Campaign *>(payload)->signals;
  std::lock_guard<std::mutex> guard(signals->mu);
  signals->term = term;
  signals->stopped.notify_all();
}

// A loss stops COMMAND as a lost lock does for exec; a campaign that ended (term 0) wakes the
// main thread with the error.
void on_revoked(rlock_election *, int64_t term, rlock_revoke_reason reason, void *payload) {
  auto *campaign = static_cast<Campaign *>(payload);
  if (reason == RLOCK_REVOKED_RESIGNED) return;  // we resigned: COMMAND has ended
  if (term == 0) {
    const rlock_error_info *info = rlock_last_error();
    std::lock_guard<std::mutex> guard(campaign->signals->mu);
    campaign->signals->campaign_over = true;
    campaign->signals->campaign_error =
        reason == RLOCK_REVOKED_CLOSED ? RLOCK_ECLOSED : static_cast<int>(info->code);
    campaign->signals->campaign_message = info->message;
    campaign->signals->stopped.notify_all();
    return;
  }
  stop_for_loss(campaign->notice, reason == RLOCK_REVOKED_UNREACHABLE
                                      ? "Redis could not be reached to renew it"
                                  : reason == RLOCK_REVOKED_CLOSED
                                      ? "the client closed"
                                      : "its lock was deleted or taken by another owner");
}

// The environment of COMMAND: ours, with --term-env set to the term. The strings live in
// `storage`.
std::vector<char *> environment_with_term(const Args &args, int64_t term,
                                          std::vector<std::string> *storage) {
  const std::string prefix = args.term_env + "=";
  for (char **e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) storage->push_back(*e);
  }
  storage->push_back(prefix + std::to_string(term));
  std::vector<char *> envp;
  for (std::string &entry : *storage) envp.push_back(&entry[0]);
  envp.push_back(nullptr);
  return envp;
}

// Waits until leader, or until a signal, --wait or a failed campaign ends the wait. Returns 0
// once leader, or the exit code after saying why not.
int wait_to_lead(const Args &args, SignalState *signals) {
  using Clock = std::chrono::steady_clock;
  const bool bounded = args.wait_ms > 0;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(args.wait_ms);
  std::unique_lock<std::mutex> guard(signals->mu);
  auto over = [signals] {
    return signals->term > 0 || signals->campaign_over || signals->stop_signal != 0;
  };
  if (bounded) {
    signals->stopped.wait_until(guard, deadline, over);
  } else {
    signals->stopped.wait(guard, over);
  }
  if (signals->stop_signal != 0) {
    guard.unlock();
    return stopped_by_signal(args, signals);
  }
  if (signals->term > 0) return 0;
  if (signals->campaign_over) {
    const int rc = signals->campaign_error;
    const std::string message = signals->campaign_message;
    guard.unlock();
    std::fprintf(stderr, "rlock: the campaign for leader of '%s' ended: %s\n", args.name.c_str(),
                 message.empty() ? rlock_strerror(rc) : message.c_str());
    return finish(signals, exit_code_for(rc));
  }
  guard.unlock();
  std::fprintf(stderr, "rlock: not the leader of '%s' after --wait %s\n", args.name.c_str(),
               seconds_text(args.wait_ms).c_str());
  return finish(signals, kExitTempFail);
}

int run_elect(const Args &args) {
  SignalState *signals = nullptr;
  sigset_t original_mask;
  if (int code = start_signal_thread(&signals, &original_mask)) return code;

  LostNotice notice;
  notice.name = args.name;
  notice.what = "leadership of";
  notice.mode = args.on_lost;
  notice.kill_after_ms = args.kill_after_ms;
  notice.signals = signals;
  Campaign campaign{signals, &notice};
  int code = 0;
  {
    Session session;
    int64_t wait_ms = args.wait_ms;
    if ((code = connect_for_exec(args, session, signals, &wait_ms))) return finish(signals, code);
    int rc = rlock_election_campaign(session.election, on_elected, on_revoked, &campaign);
    if (rc != RLOCK_OK) return finish(signals, report(rc));
    Args rest = args;
    rest.wait_ms = args.wait_ms > 0 ? std::max<int64_t>(1, wait_ms) : args.wait_ms;
    if ((code = wait_to_lead(rest, signals))) return code;
    int64_t term = 0;
    {
      std::lock_guard<std::mutex> guard(signals->mu);
      term = signals->term;
    }
    std::vector<std::string> storage;
    std::vector<char *> envp;
    if (!args.term_env.empty()) envp = environment_with_term(args, term, &storage);
    pid_t pid = 0;
    code = start_command(args, signals, original_mask, &pid,
                         args.term_env.empty() ? environ : envp.data());
    if (code == 0) code = wait_command(pid, signals);
    rc = rlock_election_resign(session.election);
    if (rc != RLOCK_OK) {
      report(rc, "warning: leadership was not given up, its lock will expire by its lease: ");
    }
  }  // frees the election (waiting for a running callback) and the client
  stop_signal_handling(signals);
  rlock_cancel_token_free(signals->token);
  signals->token = nullptr;
  return code;
}

}  // namespace

int main(int argc, char **argv) {
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const UsageError &error) {
    std::fprintf(stderr, "rlock: %s\n%sTry 'rlock --help' for more information.\n",
                 error.message.c_str(), kUsage);
    return kExitUsage;
  }
  if (args.help) {
    std::printf("%s%s", kUsage, kHelp);
    return std::fflush(stdout) == 0 ? 0 : kExitSoftware;
  }
  if (args.command == "--version") {
    std::printf("rlock %s\n", rlock_version_string());
    return std::fflush(stdout) == 0 ? 0 : kExitSoftware;
  }
  if (args.command == "status") return run_status(args);
  if (args.command == "unlock") return run_unlock(args);
  if (args.command == "list") return run_list(args);
  if (args.command == "watch") return run_watch(args);
  if (args.command == "elect") return run_elect(args);
  return run_exec(args);
}
