"""The facts the Python layer keeps of the C library match it: the status codes and lost-lock
reasons match rlock.h (parsed here), every code has a deliberate exception class, and every
default in a signature or in the Python docs is the C library's (rlock_*_options_init)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import rlock
import rlock.asyncio
from rlock import _errors, _native

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "capi" / "include" / "rlock" / "rlock.h"


def header_enum(name: str) -> dict[str, int]:
    """NAME -> value for the items of `typedef enum <name> { ... } <name>;` in rlock.h."""
    text = HEADER.read_text()
    body = re.search(r"typedef enum %s \{(.*?)\} %s;" % (name, name), text, re.S)
    assert body, f"enum {name} not found in {HEADER}"
    return {m[1]: int(m[2]) for m in re.finditer(r"(RLOCK_\w+) = (-?\d+)", body[1])}


def test_status_codes_match_the_header():
    assert _errors._CODES == header_enum("rlock_error_code")


def test_every_status_code_has_a_deliberate_class():
    codes = set(header_enum("rlock_error_code")) - {"RLOCK_OK"}
    mapped, generic = set(_errors._BY_NAME), _errors._GENERIC
    assert not mapped & generic, "a code is both mapped and generic"
    assert mapped | generic == codes, (
        "map each new code in rlock/_errors.py to an exception class (_BY_NAME) or to LockError "
        "(_GENERIC)"
    )


def test_exception_codes_are_the_header_codes():
    values = {v: k for k, v in header_enum("rlock_error_code").items()}
    for cls in vars(_errors).values():
        if isinstance(cls, type) and issubclass(cls, rlock.LockError):
            assert cls.code in values, f"{cls.__name__}.code {cls.code} is not an rlock.h code"
            if cls is not rlock.LockError:
                assert _errors._BY_CODE[cls.code] is cls, cls.__name__


def test_lost_reasons_match_the_header():
    reasons = {
        name.removeprefix("RLOCK_LOST_"): v for name, v in header_enum("rlock_lost_reason").items()
    }
    assert {r.name: int(r) for r in rlock.LostReason} == reasons


def test_event_kinds_match_the_header():
    kinds = {
        name.removeprefix("RLOCK_EVENT_"): v for name, v in header_enum("rlock_event_kind").items()
    }
    assert {k.name: int(k) for k in rlock.EventKind} == kinds


def test_histogram_bounds_match_the_header():
    text = HEADER.read_text()
    bounds = int(re.search(r"#define RLOCK_HISTOGRAM_BOUNDS (\d+)", text)[1])
    assert len(_native.HISTOGRAM_BOUNDS_US) == bounds
    assert rlock.Histogram is not None and len(rlock._stats.HISTOGRAM_BOUNDS) == bounds


# Each keyword argument with a default of the C library: (function, argument) -> C default (ms
# for durations, converted to seconds).
CLIENT = _native.client_option_defaults()
LOCK = _native.lock_option_defaults()
KEYWORD_DEFAULTS = [
    (rlock.Client.__init__, "connect_timeout", CLIENT["connect_timeout_ms"] / 1000),
    (rlock.Client.__init__, "command_timeout", CLIENT["command_timeout_ms"] / 1000),
    (rlock.Client.__init__, "pool_size", CLIENT["pool_size"]),
    (rlock.Client.__init__, "watchdog_lease", CLIENT["watchdog_lease_ms"] / 1000),
    (rlock.Client.__init__, "poll_cap", CLIENT["poll_cap_ms"] / 1000),
    (rlock.Client.spin_lock, "initial_backoff", LOCK["spin_initial_ms"] / 1000),
    (rlock.Client.spin_lock, "max_backoff", LOCK["spin_max_ms"] / 1000),
    (rlock.Client.fair_lock, "waiter_timeout", LOCK["fair_wait_ms"] / 1000),
    (rlock.asyncio.Client.spin_lock, "initial_backoff", LOCK["spin_initial_ms"] / 1000),
    (rlock.asyncio.Client.spin_lock, "max_backoff", LOCK["spin_max_ms"] / 1000),
    (rlock.asyncio.Client.fair_lock, "waiter_timeout", LOCK["fair_wait_ms"] / 1000),
]


@pytest.mark.parametrize("function,argument,expected", KEYWORD_DEFAULTS)
def test_keyword_defaults_are_the_c_library_ones(function, argument, expected):
    assert inspect.signature(function).parameters[argument].default == expected


def test_the_c_defaults_are_the_documented_ones():
    # What rlock.h documents; tests/capi/header_facts_test.cpp pins it to the library.
    assert CLIENT["max_name_len"] == _native.DEFAULT_MAX_NAME_LEN
    assert LOCK["lease_ms"] == _native.LEASE_WATCHDOG


def test_docs_state_the_defaults():
    """Every "`argument` (default N s)" in the Python docs is the signature's default."""
    defaults = {argument: expected for _, argument, expected in KEYWORD_DEFAULTS}
    found = 0
    for doc in (ROOT / "docs" / "python.md", ROOT / "python" / "README.md"):
        for m in re.finditer(r"`(\w+)`\s+\(default ([0-9.]+)( ?ms| ?s)?\b", doc.read_text()):
            argument, number, unit = m[1], float(m[2]), (m[3] or "").strip()
            assert argument in defaults, f"{doc.name}: {m[0]!r} names no known default"
            value = number / 1000 if unit == "ms" else number
            assert value == defaults[argument], (
                f"{doc.name}: {m[0]!r}, the default is {defaults[argument]}"
            )
            found += 1
    assert found > 0, "the docs no longer state a default: drop or adapt this test"


def test_default_url_is_the_c_default_address():
    text = HEADER.read_text()
    host = re.search(r'host;\s*/\* default "([^"]+)" \*/', text)[1]
    port = re.search(r"port;\s*/\* default (\d+) \*/", text)[1]
    assert rlock._client._DEFAULT_URL == f"redis://{host}:{port}"
