#!/usr/bin/env bash
# exec, status and unlock over TLS: redis-servers of this test with a TLS port only, the
# certificates of tests/fixtures/tls-certs.sh; the settings given as rediss:// URL options and
# as the flags --cacert, --cacertdir, --cert, --key, --sni and --insecure. A verification
# failure exits 69 with OpenSSL's reason; TLS flags without a TLS URL are usage errors (64).
source "$(dirname "$0")/lib.sh"
: "${RLOCK_TEST_TLS_CERTS_SCRIPT:?run through ctest (needs the certificates' script)}"
: "${RLOCK_TEST_TLS_CERT_DIR:?run through ctest (needs the certificates' directory)}"
name="$prefix:lock"
ran="$work/ran"
password=S3CRET
certs=$RLOCK_TEST_TLS_CERT_DIR
bash "$RLOCK_TEST_TLS_CERTS_SCRIPT" "$certs" >/dev/null
server=${RLOCK_TEST_REDIS_SERVER:-redis-server}
# Each server's pid goes to DIR/pid: start_tls_server runs in a $(...) subshell, whose
# variables the script never sees.
stop_servers() {
  local pidfile
  for pidfile in "$work"/*/pid; do
    [ -f "$pidfile" ] && kill -KILL "$(cat "$pidfile")" 2>/dev/null || true
  done
  cleanup
}
trap stop_servers EXIT

# start_tls_server DIR AUTH_CLIENTS: a TLS-only redis-server (password $password) in the
# background; prints its port once it answers.
start_tls_server() {
  local dir=$1 auth=$2 port
  port=$(free_port)
  mkdir -p "$dir"
  "$server" --port 0 --tls-port "$port" --bind 127.0.0.1 --requirepass "$password" \
    --tls-cert-file "$certs/server.crt" --tls-key-file "$certs/server.key" \
    --tls-ca-cert-file "$certs/ca.crt" --tls-auth-clients "$auth" \
    --save "" --appendonly no --dir "$dir" --logfile "$dir/log" >/dev/null 2>&1 &
  echo "$!" >"$dir/pid"
  for _ in $(seq 1 250); do
    if redis-cli --tls --cacert "$certs/ca.crt" --cert "$certs/client.crt" \
         --key "$certs/client.key" -p "$port" -a "$password" --no-auth-warning ping 2>/dev/null |
         grep -q PONG; then
      echo "$port"
      return 0
    fi
    sleep 0.02
  done
  cat "$dir/log" >&2
  fail "the TLS server in $dir never answered"
}

# no_password: the last stderr does not show the password.
no_password() { ! grep -qF "$password" "$work/err" || fail "the password is in stderr"; }

port=$(start_tls_server "$work/tls" no)
base="rediss://:$password@127.0.0.1:$port"
by_name="rediss://:$password@localhost:$port"
ca="$certs/ca.crt"

step "--help lists the TLS options"
expect_code 0 "$RLOCK" --help
for text in rediss:// --cacert --cacertdir --cert --key --sni --insecure "TLS failed"; do
  out_has "$text"
done

step "exec, status and unlock with the settings in the URL"
expect_code 0 "$RLOCK" exec --url "$base?tls_ca_file=$ca" "$name" -- touch "$ran"
[ -e "$ran" ] || fail "the command did not run"
expect_code 0 "$RLOCK" status --url "$base?tls_ca_file=$ca" "$name"
out_has "locked: no"
expect_code 1 "$RLOCK" unlock --force --url "$base?tls_ca_file=$ca&tls_verify=ca" "$name"
out_has "not locked"

step "the same with flags: a holder excludes the others, status sees it, unlock breaks it"
start_holder "$name" --url "$by_name" --cacert "$ca" --lease 60
expect_code 0 "$RLOCK" status --url "$by_name" --cacert "$ca" "$name"
out_has "locked: yes"
out_has "owner: "
expect_code 0 "$RLOCK" list --url "$by_name" --cacert "$ca" --match "$name" --json
out_has "\"name\":\"$name\",\"kind\":\"reentrant\",\"locked\":true"
expect_code 69 "$RLOCK" list --url "$base" --match "$name"  # no CA: verification fails
err_has "rlock: "
expect_code 75 "$RLOCK" exec --url "$base" --cacert="$ca" --wait 0 "$name" -- touch "$work/ran2"
[ ! -e "$work/ran2" ] || fail "the command ran while another process held the lock"
expect_code 0 "$RLOCK" unlock --force --url "$base" --cacert "$ca" --sni localhost "$name"
out_has "unlocked:"
stop_holder
[ "$holder_code" -eq 0 ] || fail "the holder's command failed: $holder_code"
expect_code 0 "$RLOCK" status --url "$base" --cacert "$ca" "$name"
out_has "locked: no"

step "--cacertdir, --insecure"
hashed="$work/hashed"
mkdir -p "$hashed"
cp "$ca" "$hashed/"
openssl rehash "$hashed" 2>/dev/null || c_rehash "$hashed" >/dev/null
expect_code 0 "$RLOCK" status --url "$base" --cacertdir "$hashed" "$name"
expect_code 0 "$RLOCK" status --url "$base" --insecure --sni anything.invalid "$name"
err_has "verification is off"

step "verification failures exit 69 with the reason, without the password"
expect_code 69 "$RLOCK" status --url "$base" "$name"
err_has "certificate verify failed"
no_password
expect_code 69 "$RLOCK" status --url "$base" --cacert "$certs/other-ca.crt" "$name"
err_has "certificate verify failed"
no_password
expect_code 69 "$RLOCK" exec --url "$base" --cacert "$ca" --sni redis.example.com --wait 5 \
  "$name" -- touch "$work/ran3"
err_has "mismatch"
no_password
[ ! -e "$work/ran3" ] || fail "the command ran although the server was not verified"
# A URL option and a flag that disagree.
expect_code 64 "$RLOCK" status --url "$base?tls_ca_file=$ca" --cacert "$certs/other-ca.crt" "$name"
err_has "tls_ca_file"
no_password

step "mutual TLS: --cert and --key, or the URL's tls_cert_file and tls_key_file"
mport=$(start_tls_server "$work/mtls" yes)
mbase="rediss://:$password@127.0.0.1:$mport"
expect_code 0 "$RLOCK" exec --url "$mbase" --cacert "$ca" --cert "$certs/client.crt" \
  --key "$certs/client.key" "$name" -- true
expect_code 0 "$RLOCK" status \
  --url "$mbase?tls_ca_file=$ca&tls_cert_file=$certs/client.crt&tls_key_file=$certs/client.key" \
  "$name"
# Refused without a certificate: the server's TLS 1.3 alert is reported, also when it meets
# the first command.
expect_code 69 "$RLOCK" status --url "$mbase" --cacert "$ca" "$name"
err_has "client certificate"
no_password

step "TLS usage errors exit 64"
expect_code 64 "$RLOCK" status --url "redis://127.0.0.1:$port" --cacert "$ca" "$name"
err_has "option --cacert needs a TLS URL"
expect_code 64 "$RLOCK" status --insecure "$name"  # $RLOCK_URL is the plaintext fixture
err_has "option --insecure needs a TLS URL"
expect_code 64 "$RLOCK" status --url "$base" --cacert "" "$name"
err_has "option --cacert needs a value"
expect_code 64 "$RLOCK" status --url "$base" --key "$certs/client.key" "$name"
err_has "--key needs --cert"
expect_code 64 "$RLOCK" status --url "$base" --cacert "$work/no-such-ca.crt" "$name"
err_has "$work/no-such-ca.crt"
no_password

step "a plaintext URL to the TLS port exits 69 and says so"
expect_code 69 "$RLOCK" status --url "redis://:$password@127.0.0.1:$port" "$name"
err_has "TLS port"
no_password
echo "PASS $test_name"
