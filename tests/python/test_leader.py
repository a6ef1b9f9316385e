"""Leader election: ``with client.leader(name) as lead:``, its asyncio form and the callback
form ``client.election``: one leader at a time, terms that grow, and loss told at once."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import rlock
import rlock.asyncio
from helpers import wait_until


class TermStore:
    """A store that keeps (term, writer) and refuses a write whose term is older than the
    newest accepted, as a fenced database would."""

    def __init__(self) -> None:
        self.mutex = threading.Lock()
        self.newest = 0
        self.accepted: list = []
        self.refused: list = []

    def write(self, term: int, writer: str) -> bool:
        with self.mutex:
            if term < self.newest:
                self.refused.append((term, writer))
                return False
            self.newest = term
            self.accepted.append((term, writer))
            return True


def test_three_candidates_lead_one_at_a_time(make_client, name, r):
    clients = [make_client(watchdog_lease=2) for _ in range(3)]
    store = TermStore()
    running = []  # bodies running now
    overlaps = []
    mutex = threading.Lock()
    terms = []

    def candidate(index: int) -> None:
        for _ in range(2):
            with clients[index].leader(name, wait=20) as lead:
                with mutex:
                    running.append(index)
                    if len(running) > 1:
                        overlaps.append(list(running))
                    terms.append(lead.term)
                for _ in range(5):
                    lead.check()
                    assert store.write(lead.term, str(index)), "the store refused the leader"
                    time.sleep(0.01)
                with mutex:
                    running.remove(index)
            time.sleep(0.05)  # let another candidate in: the lock is not fair

    threads = [threading.Thread(target=candidate, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert overlaps == [], "two leaders ran at once"
    assert len(terms) == 6
    assert terms == sorted(terms) and len(set(terms)) == 6, "terms must grow with each leader"
    assert store.refused == []
    assert {w for _, w in store.accepted} == {"0", "1", "2"}
    assert r.exists(name) == 0, "the last leader did not resign"


def test_loss_inside_the_block_is_told_and_raised_at_exit(make_client, name, r):
    client = make_client(watchdog_lease=1.5)
    with pytest.raises(rlock.LeadershipLostError) as raised:
        with client.leader(name) as lead:
            assert lead.is_leader() and not lead.lost
            assert r.hlen(name) == 1
            term = lead.term
            r.delete(name)
            assert lead.wait_lost(3) is rlock.RevokeReason.GONE
            assert lead.lost and not lead.is_leader()
            with pytest.raises(rlock.LeadershipLostError):
                lead.check()
    assert raised.value.term == term
    assert raised.value.reason is rlock.RevokeReason.GONE
    assert isinstance(raised.value, rlock.LockLostError)


def test_wait_runs_out_while_another_leads(make_client, name, r):
    holder = make_client()
    with holder.leader(name) as lead:
        other = make_client()
        started = time.monotonic()
        with pytest.raises(rlock.LockTimeoutError):
            with other.leader(name, wait=0.3):
                pytest.fail("entered without leadership")
        assert 0.25 < time.monotonic() - started < 5
        assert lead.is_leader()
    assert r.exists(name) == 0


def test_resign_hands_over_at_once(make_client, name):
    first, second = make_client(), make_client()
    elected = threading.Event()
    got = []
    with first.leader(name) as lead:
        t1 = lead.term

        def follower() -> None:
            with second.leader(name, wait=10) as lead2:
                got.append(lead2.term)
                elected.set()

        thread = threading.Thread(target=follower)
        thread.start()
        time.sleep(0.2)
        assert not elected.is_set()
        left = time.monotonic()
    assert elected.wait(5)
    assert time.monotonic() - left < 2, "took over only by the lease"
    thread.join(5)
    assert got[0] > t1


def test_campaign_on_a_key_that_is_no_lock_fails(client, name, r):
    r.set(name, "x")
    with pytest.raises(rlock.RedisError) as raised:
        with client.leader(name, wait=5):
            pytest.fail("entered")
    assert "not a lock" in str(raised.value)
    assert r.get(name) == b"x"


def test_client_close_revokes_the_callback_form(make_client, name, r):
    client = make_client()
    seen = []
    done = threading.Event()
    election = client.election(name)
    election.campaign(
        on_elected=lambda term: seen.append(("elected", term)),
        on_revoked=lambda term, reason: (seen.append(("revoked", term, reason)), done.set()),
    )
    assert wait_until(election.is_leader, timeout=5)
    term = election.term
    assert seen == [("elected", term)]
    client.close()
    assert done.is_set(), "revoked must have run when close() returns"
    assert seen[1] == ("revoked", term, rlock.RevokeReason.CLOSED)
    assert not election.is_leader()
    assert r.exists(name) == 0
    election.close()


def test_election_requeues_after_a_loss(make_client, name, r):
    client = make_client(watchdog_lease=1.5)
    terms = []
    changed = threading.Event()

    def on_elected(term: int) -> None:
        terms.append(term)
        changed.set()

    with client.election(name) as election:
        election.campaign(on_elected=on_elected)
        assert changed.wait(5)
        changed.clear()
        r.delete(name)
        assert changed.wait(5), "no new leadership after the loss"
        assert terms[1] > terms[0]
        assert election.is_leader()
    assert r.exists(name) == 0


def test_bad_arguments(client, name):
    with pytest.raises(rlock.InvalidArgumentError):
        client.leader("")
    with pytest.raises(TypeError):
        client.leader(name, wait="soon")
    with pytest.raises(rlock.InvalidArgumentError):
        client.leader(name, wait=-1)
    with pytest.raises(TypeError):
        client.election(name, requeue="yes")
    ctx = client.leader(name)
    with ctx:
        with pytest.raises(RuntimeError):
            ctx.__enter__()


def test_asyncio_leader(redis_url, name, r):
    async def main() -> None:
        client = await rlock.asyncio.connect(redis_url, watchdog_lease=1.5)
        other = await rlock.asyncio.connect(redis_url)

        async def follow() -> int:
            async with other.leader(name) as lead:
                return lead.term

        try:
            async with client.leader(name) as lead:
                assert lead.is_leader()
                term = lead.term
                with pytest.raises(rlock.LockTimeoutError):
                    async with other.leader(name, wait=0.3):
                        pytest.fail("two leaders")
                follower = asyncio.ensure_future(follow())
                await asyncio.sleep(0.2)
                assert not follower.done(), "the follower leads while the leader does"
            # Leaving resigned: the follower leads now, with a newer term.
            assert await asyncio.wait_for(follower, 5) > term

            with pytest.raises(rlock.LeadershipLostError):
                async with client.leader(name) as lead:
                    r.delete(name)
                    reason = await asyncio.wait_for(lead.wait_lost(), 3)
                    assert reason is rlock.RevokeReason.GONE
                    assert not lead.is_leader()
            assert r.exists(name) == 0
        finally:
            await other.close()
            await client.close()

    asyncio.run(main())
