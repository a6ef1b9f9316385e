"""``Client.locked`` and ``rlock.asyncio.Client.locked``: run a function under a lock named from
its arguments."""

import functools
import inspect
import string
import time
from typing import Any, Callable, Optional, Set, Tuple, TypeVar, Union

from ._errors import InvalidArgumentError, LockTimeoutError

_F = TypeVar("_F", bound=Callable[..., Any])

NameTemplate = Union[str, Callable[..., Any]]

_ON_HELD = ("raise", "skip")


def _fields(template: str) -> Set[str]:
    """The argument names or positions a str.format template refers to ("0", "user_id")."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as e:
        raise InvalidArgumentError(f"lock name template {template!r} is not valid: {e}") from None
    out: Set[str] = set()
    for _text, field, _spec, _conv in parsed:
        if field is None:
            continue
        if field == "":
            raise InvalidArgumentError(
                f"lock name template {template!r} has an empty field '{{}}': "
                "name the argument ('{user_id}') or give its position ('{0}')"
            )
        out.add(field.split(".", 1)[0].split("[", 1)[0])
    return out


def _check_template(template: str, fn: Callable[..., Any]) -> None:
    """Refuses, at decoration time, a field that no call of fn can fill."""
    params = inspect.signature(fn).parameters.values()
    names = {p.name for p in params}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    takes_varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    takes_varkw = any(p.kind == p.VAR_KEYWORD for p in params)
    for field in _fields(template):
        if field.isdigit():
            if int(field) >= len(positional) and not takes_varargs:
                raise InvalidArgumentError(
                    f"lock name template {template!r} refers to argument {field}, but "
                    f"{fn.__qualname__} takes {len(positional)} positional argument(s)"
                )
        elif field not in names and not takes_varkw:
            raise InvalidArgumentError(
                f"lock name template {template!r} refers to {field!r}, which is not a "
                f"parameter of {fn.__qualname__} (it has: {', '.join(sorted(names)) or 'none'})"
            )


def _namer(name: NameTemplate, fn: Callable[..., Any]) -> Callable[[Tuple[Any, ...], Any], str]:
    """What makes a call's lock name: the template formatted with the call's arguments (by
    position as bound to fn's signature, defaults applied, and by name), or name(*args,
    **kwargs) when name is callable."""
    if callable(name):

        def by_callable(args: Tuple[Any, ...], kwargs: Any) -> str:
            made = name(*args, **kwargs)
            if not isinstance(made, (str, bytes)):
                raise InvalidArgumentError(
                    f"the lock name function {name!r} returned {type(made).__name__}, "
                    "not a str or bytes"
                )
            return made  # type: ignore[return-value]

        return by_callable
    if not isinstance(name, str):
        raise TypeError(f"name must be a str template or a callable, not {type(name).__name__}")
    _check_template(name, fn)
    fields = _fields(name)
    signature = inspect.signature(fn)

    def by_template(args: Tuple[Any, ...], kwargs: Any) -> str:
        bound = signature.bind(*args, **kwargs)  # a wrong call: the TypeError fn would raise
        bound.apply_defaults()
        named = dict(bound.arguments)
        for p in signature.parameters.values():
            if p.kind == p.VAR_KEYWORD:
                named.update(named.pop(p.name, {}))
        for field in fields:
            if not (int(field) < len(bound.args) if field.isdigit() else field in named):
                raise InvalidArgumentError(
                    f"lock name template {name!r}: this call of {fn.__qualname__} gives no "
                    f"argument {field}"
                )
        return name.format(*bound.args, **named)

    return by_template


def _check_min_hold(min_hold: Optional[float], lease: Optional[float]) -> None:
    if min_hold is None:
        return
    if isinstance(min_hold, bool) or not isinstance(min_hold, (int, float)) or min_hold <= 0:
        raise InvalidArgumentError(f"min_hold must be None or seconds > 0, not {min_hold!r}")
    if lease is None or lease < min_hold:
        raise InvalidArgumentError(
            f"min_hold={min_hold} needs a lease of at least that long (lease={lease!r}): the "
            "hold is left to run out by its lease, which the watchdog would renew for ever"
        )


def _options(wait: Optional[float], on_held: str) -> Tuple[bool, float]:
    """(blocking, timeout) for acquire()."""
    if on_held not in _ON_HELD:
        raise InvalidArgumentError(f"on_held must be 'raise' or 'skip', not {on_held!r}")
    if wait is None:
        return True, -1
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or wait < 0:
        raise InvalidArgumentError(f"wait must be None (for ever) or seconds >= 0, not {wait!r}")
    return (wait > 0), (float(wait) if wait > 0 else -1)


def _hold_left(min_hold: Optional[float], start: float) -> float:
    """Seconds the hold must still last (min_hold), or 0 to release now."""
    if min_hold is None:
        return 0
    left = min_hold - (time.monotonic() - start)
    return left if left >= 0.001 else 0


def _when_held(on_held: str, default: Any, lock_name: Any, wait: Optional[float]) -> Any:
    """What a call that did not get the lock returns (on_held="skip"), or raises."""
    if on_held == "skip":
        return default
    raise LockTimeoutError(
        f"lock {lock_name!r} is held elsewhere"
        + (" (tried once)" if not wait else f" and was not acquired within {wait} s")
    )


def _prepare(fn: Any, name: NameTemplate, coroutine: bool) -> Callable[[Tuple[Any, ...], Any], str]:
    """Refuses what the decorator cannot lock correctly (not a function, the wrong kind for the
    client, a generator function); returns what names a call's lock."""
    if not callable(fn):
        raise TypeError(f"locked() decorates a function, not {type(fn).__name__}")
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(
            f"{fn.__qualname__} is a generator function: the lock would be released when the "
            "generator is made, before its body runs; lock inside it instead"
        )
    if coroutine and not inspect.iscoroutinefunction(fn):
        raise TypeError(
            f"{fn.__qualname__} is not a coroutine function: the locked() of an "
            "rlock.asyncio.Client decorates 'async def' functions; use an rlock.Client's "
            "locked() for plain ones"
        )
    if not coroutine and inspect.iscoroutinefunction(fn):
        raise TypeError(
            f"{fn.__qualname__} is a coroutine function: decorate it with the locked() "
            "of an rlock.asyncio.Client, which waits without blocking the event loop"
        )
    return _namer(name, fn)


def locked_sync(
    client: Any,
    name: NameTemplate,
    wait: Optional[float],
    lease: Optional[float],
    on_held: str,
    default: Any,
    min_hold: Optional[float] = None,
) -> Callable[[_F], _F]:
    blocking, timeout = _options(wait, on_held)
    _check_min_hold(min_hold, lease)

    def decorate(fn: _F) -> _F:
        make_name = _prepare(fn, name, coroutine=False)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            lock_name = make_name(args, kwargs)
            # owner="thread": a call nested in another of the same name, on this thread,
            # re-enters instead of waiting for itself. With min_hold each call is an owner of
            # its own: a hold left to run out belongs to no later call.
            lock = client.lock(lock_name, lease=lease, owner="object" if min_hold else "thread")
            if not lock.acquire(blocking, timeout):
                return _when_held(on_held, default, lock_name, wait)
            start = time.monotonic()
            try:
                return fn(*args, **kwargs)
            finally:
                left = _hold_left(min_hold, start)
                if left:
                    lock.extend(left, replace_ttl=True)  # stays held until then
                else:
                    lock.release()

        return run  # type: ignore[return-value]

    return decorate


def locked_async(
    client: Any,
    name: NameTemplate,
    wait: Optional[float],
    lease: Optional[float],
    on_held: str,
    default: Any,
    min_hold: Optional[float] = None,
) -> Callable[[_F], _F]:
    blocking, timeout = _options(wait, on_held)
    _check_min_hold(min_hold, lease)

    def decorate(fn: _F) -> _F:
        make_name = _prepare(fn, name, coroutine=True)

        @functools.wraps(fn)
        async def run(*args: Any, **kwargs: Any) -> Any:
            lock_name = make_name(args, kwargs)
            # owner="task": a nested call of the same name in this task re-enters (with
            # min_hold each call is an owner of its own, as in locked_sync).
            lock = client.lock(lock_name, lease=lease, owner="object" if min_hold else "task")
            if not await lock.acquire(blocking, timeout):
                return _when_held(on_held, default, lock_name, wait)
            start = time.monotonic()
            try:
                return await fn(*args, **kwargs)
            finally:
                left = _hold_left(min_hold, start)
                if left:
                    await lock.extend(left, replace_ttl=True)  # stays held until then
                else:
                    await lock.release()

        return run  # type: ignore[return-value]

    return decorate
