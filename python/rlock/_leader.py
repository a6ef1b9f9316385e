"""Leader election (docs/leader.md): ``with client.leader(name) as lead:`` runs the body while
this process leads; ``lead.term`` fences its writes. The campaign is the C library's: waiting to
lead holds no thread."""

from __future__ import annotations

import asyncio
import enum
import threading
from typing import Any, Callable, Optional

from . import _errors, _native
from ._errors import ClientClosedError, LockError, LockLostError, LockTimeoutError

__all__ = ["Election", "Leadership", "LeadershipLostError", "RevokeReason"]


class RevokeReason(enum.IntEnum):
    """Why a leadership, or a campaign, ended (rlock.h ``rlock_revoke_reason``)."""

    GONE = 1
    """The key was deleted, or is held by another owner."""
    UNREACHABLE = 2
    """Renewals failed until the hold's validity deadline."""
    RESIGNED = 4
    """This process resigned (left the ``with`` block, ``resign()``, ``close()``)."""
    CLOSED = 5
    """The client was closed."""
    FAILED = 6
    """The campaign met an error that does not pass by itself (the key is not a lock, an ACL
    refusal)."""


class LeadershipLostError(LockLostError):
    """Leadership ended while the ``with client.leader(...)`` body still ran: another process may
    have led meanwhile, so work done after ``reason`` came may not have been exclusive. Writes
    fenced with ``term`` are safe: a store that checks terms refused the late ones."""

    def __init__(self, message: str, term: int = 0, reason: Optional[RevokeReason] = None) -> None:
        super().__init__(message)
        self.term = term
        self.reason = reason


def _campaign_error(reason: int, code: int, message: str, name: bytes) -> LockError:
    """The exception of a campaign that ended without leadership."""
    if reason == RevokeReason.CLOSED:
        return ClientClosedError(f"the client was closed while campaigning for {name!r}")
    error = _errors._BY_CODE.get(code, LockError)(
        f"the campaign for leader of {name!r} failed: {message}"
    )
    error.code = code
    return error


# ---- the low-level form ----------------------------------------------------------------------


class Election:
    """A leader election on a name (``Client.election``). ``campaign(on_elected, on_revoked)``
    starts campaigning and returns at once; ``on_elected(term)`` and ``on_revoked(term,
    reason)`` run on the library's threads (keep them short: hand work to your own threads).
    After a loss it campaigns again unless made with ``requeue=False``. ``close()`` resigns."""

    def __init__(self, native: _native.Election, name: bytes) -> None:
        self._native = native
        self._name = name

    @property
    def name(self) -> bytes:
        return self._name

    def campaign(
        self,
        on_elected: Optional[Callable[[int], Any]] = None,
        on_revoked: Optional[Callable[[int, RevokeReason], Any]] = None,
    ) -> None:
        # The dispatcher must not refer to self: the native object keeps it, and a cycle
        # through a C++ object is invisible to the garbage collector.
        def dispatch(elected: bool, term: int, reason: int, code: int, message: str) -> None:
            if elected:
                if on_elected is not None:
                    on_elected(term)
            elif on_revoked is not None:
                on_revoked(term, RevokeReason(reason))

        self._native.campaign(dispatch)

    def is_leader(self) -> bool:
        """This process leads, and its hold is within its validity deadline (checked against
        the clock on every call: a process paused past its lease sees False at once)."""
        return self._native.is_leader()

    @property
    def term(self) -> Optional[int]:
        """The term of the current leadership, None when not the leader."""
        return self._native.term()

    def resign(self) -> None:
        """Stops campaigning or leading; a leader's lock is released at once."""
        self._native.resign()

    def close(self) -> None:
        """Resigns, and no callback runs after this returns."""
        self._native.close()

    def __enter__(self) -> "Election":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<rlock.Election {self._name!r}>"


# ---- the context manager ---------------------------------------------------------------------


class _Campaign:
    """What the callbacks of one leadership report, for waiting threads or an event loop: `wake`
    (if any) runs with no lock held after each change."""

    def __init__(self, wake: Optional[Callable[[], None]] = None) -> None:
        self._changed = threading.Condition()
        self._wake = wake
        self.term = 0
        self.ended = False  # the campaign or leadership is over
        self.reason: Optional[RevokeReason] = None
        self.code = 0
        self.message = ""

    def report(self, elected: bool, term: int, reason: int, code: int, message: str) -> None:
        with self._changed:
            if elected:
                self.term = term
            elif not self.ended:
                self.ended = True
                self.reason = RevokeReason(reason)
                self.code = code
                self.message = message
            self._changed.notify_all()
        if self._wake is not None:
            self._wake()

    def snapshot(self) -> "tuple[int, bool, Optional[RevokeReason]]":
        with self._changed:
            return self.term, self.ended, self.reason

    def wait(self, until: Callable[[], bool], timeout: Optional[float]) -> bool:
        """Blocks until `until()` (called with the state locked) or `timeout` seconds."""
        with self._changed:
            return self._changed.wait_for(until, timeout)


class _LeadershipBase:
    def __init__(self, election: Election, campaign: _Campaign) -> None:
        self._election = election
        self._campaign = campaign
        self.term: int = campaign.term

    @property
    def name(self) -> bytes:
        return self._election.name

    @property
    def lost(self) -> bool:
        """Leadership ended (before the ``with`` block did)."""
        return self._campaign.snapshot()[1]

    @property
    def reason(self) -> Optional[RevokeReason]:
        return self._campaign.snapshot()[2]

    def is_leader(self) -> bool:
        return not self.lost and self._election.is_leader()

    def check(self) -> None:
        """Raises ``LeadershipLostError`` when this process no longer leads."""
        if not self.is_leader():
            raise self._lost_error()

    def _lost_error(self) -> LeadershipLostError:
        reason = self.reason or RevokeReason.UNREACHABLE  # past its deadline, not yet told
        return LeadershipLostError(
            f"leadership of {self.name!r} (term {self.term}) was lost: {reason.name.lower()}",
            self.term,
            reason,
        )

    def __repr__(self) -> str:
        return f"<rlock.{type(self).__name__} {self.name!r} term={self.term} lost={self.lost}>"


class Leadership(_LeadershipBase):
    """What ``with client.leader(name) as lead:`` gives: ``lead.term`` (fence writes with it),
    ``lead.is_leader()`` (check it before each action), ``lead.lost`` and ``lead.reason`` (set the
    moment leadership ends), ``lead.check()`` (raises ``LeadershipLostError`` once it has),
    ``lead.wait_lost(timeout)``."""

    def wait_lost(self, timeout: Optional[float] = None) -> Optional[RevokeReason]:
        """Blocks until leadership ends (its reason) or `timeout` seconds pass (None)."""
        self._campaign.wait(lambda: self._campaign.ended, timeout)
        return self.reason if self.lost else None


class Leading:
    """``with client.leader(name, wait=None) as lead:``: campaigns, and enters once leader
    (``LockTimeoutError`` when ``wait`` seconds pass first). Leaving resigns at once, so another
    candidate takes over; if leadership was lost meanwhile, leaving raises
    ``LeadershipLostError`` (unless the body raised). ``lead.wait_lost(timeout)`` blocks until
    leadership ends."""

    def __init__(self, native: _native.Election, name: bytes, wait: Optional[float]) -> None:
        self._election = Election(native, name)
        self._wait = wait
        self._campaign = _Campaign()
        self._lead: Optional[Leadership] = None

    def __enter__(self) -> "Leadership":
        if self._lead is not None:
            raise RuntimeError("this leader() context is already in use; call leader() again")
        name = self._election.name
        try:
            self._election._native.campaign(self._campaign.report)
            c = self._campaign
            if not c.wait(lambda: bool(c.term or c.ended), self._wait):
                raise LockTimeoutError(f"not the leader of {name!r} after {self._wait} s")
            term, ended, reason = c.snapshot()
            if not term:
                c = self._campaign
                raise _campaign_error(c.reason or 0, c.code, c.message, name)
        except BaseException:
            self._election.close()
            raise
        self._lead = Leadership(self._election, self._campaign)
        return self._lead

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        lead = self._lead
        lost = lead is not None and lead.lost
        self._election.close()
        if lead is not None and lost and exc_type is None:
            raise lead._lost_error()


class AsyncLeading:
    """``async with client.leader(name, wait=None) as lead:`` (``rlock.asyncio``): as ``Leading``,
    awaiting the campaign on the event loop; ``await lead.wait_lost()`` returns once leadership
    ends."""

    def __init__(self, native: _native.Election, name: bytes, wait: Optional[float]) -> None:
        self._election = Election(native, name)
        self._wait = wait
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._changed: Optional[asyncio.Event] = None
        self._campaign = _Campaign(self._wake)
        self._lead: Optional[AsyncLeadership] = None

    def _wake(self) -> None:
        loop, changed = self._loop, self._changed
        if loop is None or changed is None:
            return
        try:
            loop.call_soon_threadsafe(changed.set)
        except RuntimeError:
            pass  # the loop is closed: nobody waits any more

    async def __aenter__(self) -> "AsyncLeadership":
        if self._lead is not None:
            raise RuntimeError("this leader() context is already in use; call leader() again")
        self._loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        name = self._election.name
        try:
            self._election._native.campaign(self._campaign.report)
            await asyncio.wait_for(self._until_decided(), self._wait)
            term, ended, reason = self._campaign.snapshot()
            if not term:
                c = self._campaign
                raise _campaign_error(c.reason or 0, c.code, c.message, name)
        except asyncio.TimeoutError:
            await self._close()
            raise LockTimeoutError(f"not the leader of {name!r} after {self._wait} s") from None
        except BaseException:
            await self._close()
            raise
        self._lead = AsyncLeadership(self._election, self._campaign, self._changed)
        return self._lead

    async def _until_decided(self) -> None:
        assert self._changed is not None
        while True:
            term, ended, _ = self._campaign.snapshot()
            if term or ended:
                return
            await self._changed.wait()
            self._changed.clear()

    async def _close(self) -> None:
        # Resigning releases the lock: one round trip, off the event loop.
        loop = asyncio.get_running_loop()
        await asyncio.shield(loop.run_in_executor(None, self._election.close))

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        lead = self._lead
        lost = lead is not None and lead.lost
        await self._close()
        if lead is not None and lost and exc_type is None:
            raise lead._lost_error()


class AsyncLeadership(_LeadershipBase):
    """``Leadership`` for asyncio, with ``await wait_lost()``."""

    def __init__(self, election: Election, campaign: _Campaign, changed: asyncio.Event) -> None:
        super().__init__(election, campaign)
        self._changed = changed

    async def wait_lost(self) -> RevokeReason:
        """Returns the reason once leadership has ended."""
        while True:
            _, ended, reason = self._campaign.snapshot()
            if ended and reason is not None:
                return reason
            await self._changed.wait()
            self._changed.clear()
