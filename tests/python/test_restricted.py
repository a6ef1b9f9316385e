"""Restricted servers (docs/servers.md): an ACL user that may not run what rlock needs is
refused when the client is made, with the command named."""

from __future__ import annotations

import pytest
import rlock


def _user(r, name: str, commands: list, channels: list) -> str:
    r.acl_setuser(
        name, enabled=True, passwords=["+pw"], keys=["*"], channels=channels, commands=commands
    )
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
    user = _user(make_redis(private_redis.url), "restricted", commands, channels)
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
