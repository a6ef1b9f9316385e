"""Restricted servers (docs/servers.md): an ACL user that may not run what rlock needs is
refused when the client is made, with the command named."""

from __future__ import annotations

import hashlib

import pytest
import rlock


def _version(r) -> tuple:
    return tuple(int(x) for x in r.info("server")["redis_version"].split(".")[:2])


def _user(r, name: str, commands: list, channels: list) -> str:
    # Channel rules came with Redis 6.2: before, every user may use every channel.
    rules = {"channels": channels} if _version(r) >= (6, 2) else {}
    r.acl_setuser(name, enabled=True, passwords=["+pw"], keys=["*"], commands=commands, **rules)
    return name


@pytest.mark.parametrize(
    "commands, channels, named",
    [
        (["+@all", "-publish"], ["*"], "PUBLISH"),
        (["+@all"], [], "PUBLISH"),  # no channels: Redis 7's default for a new user
        (["+@all", "-evalsha"], ["*"], "EVALSHA"),
    ],
)
def test_missing_permission_is_named_at_creation(
    private_redis, make_redis, commands, channels, named
):
    r = make_redis(private_redis.url)
    if not channels and _version(r) < (6, 2):
        pytest.skip("ACL channel rules: Redis 6.2+")
    user = _user(r, "restricted", commands, channels)
    with pytest.raises(rlock.NoPermissionError) as info:
        rlock.Client(f"redis://{user}:pw@127.0.0.1:{private_redis.port}")
    assert named in str(info.value)


def test_user_without_client_config_info_locks(private_redis, make_redis, name):
    commands = ["+@all", "-client", "-config", "-info"]
    user = _user(make_redis(private_redis.url), "managed", commands, ["*"])
    with rlock.Client(f"redis://{user}:pw@127.0.0.1:{private_redis.port}") as c:
        with c.lock(name) as lock:
            assert lock.held()
        assert not c.lock(name).locked()


def _every_kind(c: rlock.Client, name: str) -> None:
    """One acquire and release of each lock kind, and each semaphore and latch call path."""
    for lock in (c.lock(name), c.fenced_lock(name + "-f"), c.spin_lock(name + "-s")):
        with lock:
            assert lock.held()
    with c.fair_lock(name + "-q") as lock:
        assert lock.held()
    rw = c.read_write_lock(name + "-rw")
    with rw.read_lock():
        pass
    with rw.write_lock():
        pass
    sem = c.semaphore(name + "-sem")
    sem.try_set_permits(1)
    assert sem.acquire(timeout=1)
    sem.release()
    psem = c.expirable_semaphore(name + "-psem")
    psem.try_set_permits(1)
    permit = psem.acquire(timeout=1)
    assert permit is not None
    permit.release()
    latch = c.count_down_latch(name + "-latch")
    latch.try_set_count(1)
    latch.count_down()
    assert latch.wait(timeout=1)


def _calls(r, command: str) -> int:
    return r.info("commandstats").get("cmdstat_" + command, {}).get("calls", 0)


def _evals(r) -> int:
    return _calls(r, "eval")


def _script_loads(r) -> int:
    # Redis 7 counts subcommands apart; before, every SCRIPT call is "script".
    return _calls(r, "script|load") if _version(r) >= (7, 0) else _calls(r, "script")


def test_restarted_server_without_scripts(private_redis, make_redis, name):
    """A server restarted without the script cache (or a promoted replica) costs one SCRIPT LOAD
    per script and no EVAL; the same calls afterwards go by EVALSHA alone."""
    with rlock.Client(private_redis.url) as c:
        _every_kind(c, name)
        private_redis.stop()
        private_redis.start()
        r = make_redis(private_redis.url)
        _every_kind(c, name + "-after")
        reloaded, evals = _script_loads(r), _evals(r)
        assert reloaded > 0, "no script was loaded again"
        assert evals == 0, "scripts were sent with their source by EVAL"
        _every_kind(c, name + "-again")
        assert _script_loads(r) == reloaded, "scripts were loaded more than once"
        assert _evals(r) == 0, "scripts were sent with their source by EVAL"


def test_scripts_evicted_by_other_clients_evals_cost_one_reload(private_redis, make_redis, name):
    """Redis 7.4+ (8.0 in the server matrix) keeps at most 500 scripts loaded by EVAL and
    evicts the oldest: another application's EVALs push rlock's scripts out. The next call
    reloads each once, by SCRIPT LOAD, which no EVAL evicts: the calls after it go by EVALSHA
    alone, however many EVALs run meanwhile."""
    r = make_redis(private_redis.url)
    # A user that may not SCRIPT LOAD gets the scripts loaded by EVAL (as rlock before 0.3 did).
    user = _user(r, "noload", ["+@all", "-script"], ["*"])
    with rlock.Client(f"redis://{user}:pw@127.0.0.1:{private_redis.port}") as old:
        with old.lock(name):  # its acquire and release scripts, loaded by EVAL after NOSCRIPT
            pass
    probe = "return 'rlock-eviction-probe'"
    r.eval(probe, 0)
    for i in range(600):  # another application's scripts, each of its own
        r.eval(f"return {i}", 0)
    if r.script_exists(hashlib.sha1(probe.encode()).hexdigest())[0]:
        pytest.skip("this server keeps every script EVAL loaded (eviction: Redis 7.4+)")
    with rlock.Client(private_redis.url) as c:
        lock = c.lock(name)
        evals, loads = _evals(r), _script_loads(r)
        with lock:
            pass
        assert _script_loads(r) - loads == 2, "acquire and release should each be loaded once"
        assert _evals(r) == evals, "scripts were sent with their source by EVAL"
        for i in range(600, 1200):  # as many more: SCRIPT LOAD's scripts are never evicted
            r.eval(f"return {i}", 0)
        evals = _evals(r)
        with lock:
            pass
        assert _script_loads(r) - loads == 2, "the other application's EVALs evicted them again"
        assert _evals(r) == evals, "scripts were sent with their source by EVAL"
