"""Expected-violation self-tests (FAULTS.md pass criterion 3): the checkers see a double grant
when there is one, and stay quiet on a history without one, so a clean result elsewhere
means something."""

from __future__ import annotations

from pathlib import Path

import checkers
import pytest
from harness import Case, Chaos, descriptor_growth


def _write(path: Path, lines: str) -> checkers.History:
    path.write_text("\n".join(line.strip() for line in lines.strip().splitlines()) + "\n")
    return checkers.read_history(path)


def test_checkers_flag_a_hand_written_double_grant(tmp_path):
    # 1.0 holds "n" over [20, 80] ms and is told its release went fine; 2.0 enters at 50 ms.
    # Both write the counter (which shows 1: an update was lost) and the fence accepts token 5
    # after it accepted 7.
    ms = 1_000_000
    h = _write(
        tmp_path / "log",
        f"""
        acq 1.0 n X {10 * ms} {20 * ms} 0 7
        acq 2.0 n X {30 * ms} {50 * ms} 0 5
        wrote 1.0 n
        wrote 2.0 n
        fence 2.0 n 7 {55 * ms} {56 * ms} 1
        fence 1.0 n 5 {60 * ms} {61 * ms} 1
        rel 1.0 n X {80 * ms} {81 * ms} 0
        rel 2.0 n X {90 * ms} {91 * ms} 0
        rel 3.0 n X {95 * ms} {96 * ms} 0
    """,
    )
    (tmp_path / "n").write_text("00000000000000000001\n")
    assert checkers.overlaps(h) and "2.0 (X) entered at 50.000 ms" in checkers.overlaps(h)[0]
    assert checkers.lost_updates(h, tmp_path) == [
        "n: counter 1 after 2 sections wrote it (0 cut short): 1 updates lost"
    ]
    history = checkers.mutex_history(h)
    assert any("3.0" in v and "without a hold" in v for v in history)
    assert any("1.0's release returned ok" in v for v in history)
    fence = checkers.fencing(h)
    assert any("stale write by 1.0 with token 5" in v for v in fence.violations)
    assert any("token 5 of 2.0 is not above token 7" in v for v in fence.violations)


def test_a_line_still_being_written_is_left_for_the_next_read(tmp_path):
    # A running test reads the log while workers append: the unfinished last line is not a
    # record yet (reading it failed with an IndexError before).
    ms = 1_000_000
    log = tmp_path / "log"
    log.write_text(f"acq 1.0 n X {10 * ms} {20 * ms} 0 7\nrel 1.0 n X {30 * ms}")
    h = checkers.read_history(log)
    assert len(h.holds) == 1 and h.holds[0].rel_rc is None
    with log.open("a") as f:
        f.write(f" {31 * ms} 0\n")
    h = checkers.read_history(log)
    assert len(h.holds) == 1 and h.holds[0].end == 30 * ms and h.holds[0].rel_rc == 0


def test_checkers_pass_a_hand_written_clean_history(tmp_path):
    ms = 1_000_000
    h = _write(
        tmp_path / "log",
        f"""
        acq 1.0 n X {10 * ms} {20 * ms} 0 7
        acq 2.0 n X {30 * ms} {81 * ms} 0 8
        wrote 1.0 n
        fence 1.0 n 7 {55 * ms} {56 * ms} 1
        rel 1.0 n X {80 * ms} {81 * ms} 0
        wrote 2.0 n
        fence 2.0 n 8 {85 * ms} {86 * ms} 1
        fence 1.0 n 7 {87 * ms} {88 * ms} 0
        rel 2.0 n X {90 * ms} {91 * ms} 0
        acq 3.0 r R {92 * ms} {93 * ms} 0 0
        acq 4.0 r R {92 * ms} {94 * ms} 0 0
        rel 3.0 r R {95 * ms} {96 * ms} 0
        rel 4.0 r R {95 * ms} {96 * ms} 0
    """,
    )
    (tmp_path / "n").write_text("00000000000000000002\n")
    assert checkers.overlaps(h) == []
    assert checkers.lost_updates(h, tmp_path) == []
    assert checkers.mutex_history(h) == []
    fence = checkers.fencing(h)
    assert fence.violations == [] and fence.accepted == 2 and fence.refused == 1


def test_a_kill_ends_the_hold_of_the_killed_owner(tmp_path):
    ms = 1_000_000
    path = tmp_path / "log"
    path.write_text(f"acq 77.0 n X {10 * ms} {20 * ms} 0 0\nacq 2.0 n X {30 * ms} {50 * ms} 0 0\n")
    assert checkers.overlaps(checkers.read_history(path)), "an unreleased hold lasts forever"
    assert checkers.overlaps(checkers.read_history(path, {77: 40 * ms})) == []
    assert checkers.overlaps(checkers.read_history(path, {77: 60 * ms}))


def test_a_kill_during_the_release_ends_the_hold_where_the_owner_left(tmp_path):
    # 77.0 logged that it was leaving at 40 ms and was killed at 60 ms with its release in
    # flight (no rel line): the release took effect, so 2.0 entering at 50 ms is no overlap;
    # entering at 35 ms, before 77.0 left, is one.
    ms = 1_000_000
    path = tmp_path / "log"
    path.write_text(
        f"acq 77.0 n X {10 * ms} {20 * ms} 0 0\nleave 77.0 n X {40 * ms}\n"
        f"acq 2.0 n X {30 * ms} {50 * ms} 0 0\n"
    )
    assert checkers.overlaps(checkers.read_history(path, {77: 60 * ms})) == []
    path.write_text(
        f"acq 77.0 n X {10 * ms} {20 * ms} 0 0\nleave 77.0 n X {40 * ms}\n"
        f"acq 2.0 n X {30 * ms} {35 * ms} 0 0\n"
    )
    assert checkers.overlaps(checkers.read_history(path, {77: 60 * ms}))


def test_data_loss_double_grant_is_seen_and_fencing_stops_the_stale_holder(case: Case):
    """Redis losing the lock key (the data loss that only fencing survives): the second owner
    gets in while the first is inside. The overlap checker must flag it every time, the first
    owner's release must not report success, and the resource must refuse its stale write."""
    server, resource = case.redis(), case.redis()
    conn = server.conn()
    for run in range(5):
        name = f"loss{run}"
        first = case.worker(
            "hold", server.url, names=name, kind="fenced", resource_url=resource.url
        )
        assert first.expect("acquired")[1] == "0"
        assert first.ask("write")[1] == "1"
        assert conn.delete(name) == 1  # Redis "forgets" the lock
        second = case.worker(
            "hold", server.url, names=name, kind="fenced", resource_url=resource.url, wait_ms=2000
        )
        fields = second.expect("acquired")
        assert fields[1] == "0" and int(fields[2]) > 0
        assert second.ask("write")[1] == "1"
        assert first.ask("write")[1] == "0", "the stale holder's write was accepted"
        assert first.ask("release")[1] != "0", "the first owner was told its release succeeded"
        assert second.ask("release")[1] == "0"
        for w in (first, second):
            w.send("quit")
            w.finish(10)
    h = checkers.read_history(case.log)
    flagged = {v.split(":")[0] for v in checkers.overlaps(h)}
    assert flagged == {f"loss{run}" for run in range(5)}, (
        "the overlap checker missed a double grant"
    )
    assert checkers.mutex_history(h) == []
    fence = checkers.fencing(h)
    assert fence.violations == [] and fence.refused == 5


def test_deleting_keys_under_looping_workers_is_seen(case: Case):
    """The same through the loop workers: a chaos thread deletes the lock key over and over
    while four processes contend, and the overlap, counter and linearizability checkers notice."""
    case.loses_data = True
    server = case.redis()
    workers = [
        case.worker(
            "loop", server.url, names="chaos", threads=2, duration_ms=1500, hold_us=3000, wait_ms=-1
        )
        for _ in range(4)
    ]

    def delete_key(conn, _) -> None:
        if conn.delete("chaos"):
            # The owner's release will fail (its lock is gone) and publish nothing, so wake
            # the waiters as a release would.
            conn.publish("redisson_lock__channel:{chaos}", "0")

    chaos = Chaos(server.port, delete_key, 0.0005, 0.0005, case.seed)
    try:
        for w in workers:
            w.wait(30)
    finally:
        chaos.stop()
    h = checkers.read_history(case.log)
    assert len(h.holds) > 50
    assert checkers.overlaps(h), "no overlap flagged although the lock kept vanishing"
    assert checkers.lost_updates(h, case.counters), "no lost update although sections overlapped"
    assert checkers.linearizable(h), "not found unlinearizable although sections overlapped"


def test_permit_checker_flags_one_too_many_inside_and_passes_the_limit(tmp_path):
    # A semaphore of 2 permits: 1.0 [10, 60], 2.0 [20, 40] and 3.0 [30, 50] ms are 3 inside at
    # 30 ms; 4.0 enters at 60 ms just as 1.0 leaves (2 inside at most from then on).
    ms = 1_000_000
    h = _write(
        tmp_path / "log",
        f"""
        acq 1.0 s S {5 * ms} {10 * ms} 0 0
        acq 2.0 s S {15 * ms} {20 * ms} 0 0
        acq 3.0 s S {25 * ms} {30 * ms} 0 0
        rel 2.0 s S {40 * ms} {41 * ms} 0
        rel 3.0 s S {50 * ms} {51 * ms} 0
        acq 4.0 s S {55 * ms} {60 * ms} 0 0
        rel 1.0 s S {60 * ms} {61 * ms} 0
        rel 4.0 s S {70 * ms} {71 * ms} 0
    """,
    )
    found = checkers.over_permits(h, 2)
    assert len(found) == 1 and found[0].startswith("s: 3 inside at 30.000 ms"), found
    assert checkers.over_permits(h, 3) == []
    assert checkers.most_inside(h, "s") == 3
    assert checkers.overlaps(h) == [], "permits are not exclusive sections"


def test_linearizability_flags_a_double_grant_and_passes_a_handover(tmp_path):
    # 2.0's acquire returns at 50 ms inside 1.0's hold [20, 80] ms: no order of the operations
    # is a legal lock history. In the second log 1.0 releases over [45, 55] ms, so 2.0's grant
    # at 50 ms may follow it.
    ms = 1_000_000
    bad = _write(
        tmp_path / "bad",
        f"""
        acq 1.0 n X {10 * ms} {20 * ms} 0 0
        acq 2.0 n X {30 * ms} {50 * ms} 0 0
        rel 1.0 n X {80 * ms} {81 * ms} 0
        rel 2.0 n X {90 * ms} {91 * ms} 0
    """,
    )
    found = checkers.linearizable(bad)
    assert len(found) == 1 and found[0].startswith("n: not linearizable"), found
    assert "2.0 acquire (X) [30.000 ms, 50.000 ms]" in found[0], found
    good = _write(
        tmp_path / "good",
        f"""
        acq 1.0 n X {10 * ms} {20 * ms} 0 0
        acq 2.0 n X {30 * ms} {50 * ms} 0 0
        rel 1.0 n X {45 * ms} {55 * ms} 0
        rel 2.0 n X {90 * ms} {91 * ms} 0
    """,
    )
    assert checkers.linearizable(good) == []


def test_linearizability_of_read_write_and_permits(tmp_path):
    ms = 1_000_000
    # Two readers share "rw"; a writer granted at 35 ms while 2.0 reads is a violation.
    readers = f"""
        acq 1.0 rw R {10 * ms} {20 * ms} 0 0
        acq 2.0 rw R {25 * ms} {30 * ms} 0 0
        rel 1.0 rw R {40 * ms} {41 * ms} 0
        rel 2.0 rw R {50 * ms} {51 * ms} 0
    """
    assert checkers.linearizable(_write(tmp_path / "r", readers)) == []
    writer = readers + f"acq 3.0 rw W {32 * ms} {35 * ms} 0 0\nrel 3.0 rw W {60 * ms} {61 * ms} 0"
    found = checkers.linearizable(_write(tmp_path / "w", writer))
    assert len(found) == 1 and "3.0 acquire (W)" in found[0], found
    # Three owners inside a semaphore of 2 permits at 30 ms.
    permits = f"""
        acq 1.0 s S {5 * ms} {10 * ms} 0 0
        acq 2.0 s S {15 * ms} {20 * ms} 0 0
        acq 3.0 s S {25 * ms} {30 * ms} 0 0
        rel 2.0 s S {40 * ms} {41 * ms} 0
        rel 3.0 s S {50 * ms} {51 * ms} 0
        rel 1.0 s S {60 * ms} {61 * ms} 0
    """
    h = _write(tmp_path / "s", permits)
    assert len(checkers.linearizable(h, permits=2)) == 1
    assert checkers.linearizable(h, permits=3) == []
    assert checkers.linearizable(h) == [], "without a number of permits a semaphore is skipped"


def test_linearizability_of_unknown_outcomes_kills_and_lapses(tmp_path):
    ms = 1_000_000
    # 1.0's acquire failed with ECONN (-5): it may have taken the lock, which explains its
    # release returning ok, and need not have, so 2.0 may hold meanwhile. A timeout (-2) says
    # the lock was not taken: the same release is then one without a hold.
    unknown = f"""
        acq 1.0 n X {10 * ms} {20 * ms} -5 0
        acq 2.0 n X {30 * ms} {35 * ms} 0 0
        rel 2.0 n X {40 * ms} {41 * ms} 0
        rel 1.0 n X {60 * ms} {61 * ms} 0
    """
    assert checkers.linearizable(_write(tmp_path / "u", unknown)) == []
    found = checkers.linearizable(_write(tmp_path / "t", unknown.replace("-5 0", "-2 0")))
    assert len(found) == 1 and "1.0 release (X)" in found[0], found
    # 77.0 never released: its hold ends when it was killed, and 2.0's grant at 50 ms is legal
    # after a kill at 40 ms, not before one at 60 ms.
    killed = tmp_path / "k"
    _write(
        killed,
        f"""
        acq 77.0 n X {10 * ms} {20 * ms} 0 0
        acq 2.0 n X {30 * ms} {50 * ms} 0 0
        rel 2.0 n X {70 * ms} {71 * ms} 0
    """,
    )
    assert checkers.linearizable(checkers.read_history(killed)), "an unreleased hold lasts"
    assert checkers.linearizable(checkers.read_history(killed, {77: 40 * ms})) == []
    assert checkers.linearizable(checkers.read_history(killed, {77: 60 * ms}))
    # 1.0's release said its lease had lapsed (ELOST, -11): where leases may lapse, 2.0's grant
    # inside 1.0's section is legal; where they may not, it is a violation.
    lapsed = _write(
        tmp_path / "l",
        f"""
        acq 1.0 n X {10 * ms} {20 * ms} 0 0
        acq 2.0 n X {30 * ms} {50 * ms} 0 0
        rel 1.0 n X {80 * ms} {81 * ms} -11
        rel 2.0 n X {90 * ms} {91 * ms} 0
    """,
    )
    assert checkers.linearizable(lapsed, lapses=True) == []
    assert checkers.linearizable(lapsed)


def test_every_case_history_gets_the_closing_linearizability_check(tmp_path):
    # conftest.case runs this on each passed case's log. Leases may lapse there, so a grant inside a
    # hold whose release later returned ok is what it must still find; semaphores are judged
    # only with the case's permits.
    ms = 1_000_000
    (tmp_path / "case").mkdir()
    c = Case(tmp_path / "case", 1)
    c.log.write_text(
        f"acq 1.0 n X {10 * ms} {20 * ms} 0 0\nacq 2.0 n X {30 * ms} {50 * ms} 0 0\n"
        f"rel 1.0 n X {80 * ms} {81 * ms} 0\nrel 2.0 n X {90 * ms} {91 * ms} 0\n"
    )
    with pytest.raises(AssertionError, match="n: not linearizable"):
        c.check_linearizable()
    c.log.write_text(
        "".join(f"acq {p}.0 s S {10 * ms} {(20 + p) * ms} 0 0\n" for p in range(1, 4))
        + "".join(f"rel {p}.0 s S {80 * ms} {81 * ms} 0\n" for p in range(1, 4))
    )
    c.check_linearizable()  # without permits the semaphore is skipped
    c.permits = 2
    with pytest.raises(AssertionError, match="s: not linearizable"):
        c.check_linearizable()
    c.permits = 3
    c.check_linearizable()
    c.close()


def test_descriptor_growth_bounds_sockets_and_compares_the_rest():
    # F5 and G1 read a loop worker's descriptors this way. Sockets move with the load (command
    # connections open as needed and reopen after kills); any other kind that grew is a leak.
    warm = "fds warm 0=pipe:[1],3=/tmp/h.log,4=anon_inode:[eventfd],5=socket:[7]"
    end = "fds end 0=pipe:[1],3=/tmp/h.log,4=anon_inode:[eventfd],{}"
    sockets = ",".join(f"{10 + i}=socket:[{20 + i}]" for i in range(10))
    assert descriptor_growth([warm, end.format(sockets)], pool_size=8) is None
    extra = sockets + ",30=socket:[40]"
    assert "11 sockets" in (descriptor_growth([warm, end.format(extra)], pool_size=8) or "")
    pipe = sockets + ",31=pipe:[41]"
    assert "other than sockets" in (descriptor_growth([warm, end.format(pipe)], pool_size=8) or "")
    assert descriptor_growth([warm]) == "no 'fds warm' and 'fds end' lines"
