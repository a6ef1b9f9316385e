"""The TLS keyword arguments of ``rlock.Client`` (named like redis-py's where they map), checked
and turned into the TLS fields of the C library's client options.

The C library checks all of this again; the checks here exist so that a message names the
keyword the caller wrote (``ssl_ca_certs``) rather than the C field (``tls_ca_file``), and so
that an explicit "full verification" or "TLS 1.2" can be told apart from "not given" (the C
options use 0 for both)."""

from __future__ import annotations

import os
import urllib.parse
from ssl import TLSVersion, VerifyMode
from typing import Any, Dict, Optional, Union

from . import _native
from ._errors import InvalidArgumentError

StrPath = Union[str, "os.PathLike[str]"]

_TLS_SCHEMES = {"rediss", "rediss-sentinel", "rediss-cluster"}
_PLAIN_SCHEMES = {"redis", "redis-sentinel", "redis-cluster", "unix"}
_SENTINEL_SCHEMES = {"redis-sentinel", "rediss-sentinel"}

# keyword -> the URL query option it sets (the C field of the same name).
_URL_OPTION = {
    "ssl_ca_certs": "tls_ca_file",
    "ssl_ca_path": "tls_ca_dir",
    "ssl_certfile": "tls_cert_file",
    "ssl_keyfile": "tls_key_file",
    "ssl_server_name": "tls_server_name",
}
_VERIFY_NAMES = {
    _native.TLS_VERIFY_FULL: "full",
    _native.TLS_VERIFY_CA: "ca",
    _native.TLS_VERIFY_NONE: "none",
}
_VERSION_NAMES = {_native.TLS_1_2: "1.2", _native.TLS_1_3: "1.3"}


def scheme_of(url: str) -> str:
    """The URL's scheme, or "" when it has none (the C library then says what is wrong)."""
    scheme, sep, _ = url.partition("://")
    return scheme if sep else ""


def _query(url: str) -> Dict[str, str]:
    """The URL's query options, undecoded (the last of a repeated name wins, as in the C
    parser). Only read to compare with the keywords: the C library parses and checks it."""
    query = url.partition("://")[2].partition("?")[2]
    options: Dict[str, str] = {}
    for item in query.split("&") if query else []:
        name, _, value = item.partition("=")
        options[name] = value
    return options


def _path(value: Any, what: str) -> Optional[bytes]:
    """A file or directory name as the bytes the OS uses (any str, bytes or os.PathLike)."""
    if value is None:
        return None
    try:
        path = os.fsencode(value)
    except TypeError:
        raise TypeError(
            f"{what} must be a str or os.PathLike path, not {type(value).__name__}"
        ) from None
    _check_text(path, what)
    return path


def _check_text(value: bytes, what: str) -> None:
    if not value:
        raise InvalidArgumentError(f"{what} must not be empty (None for none)")
    if b"\0" in value:
        raise InvalidArgumentError(
            f"{what} contains a NUL character; it cannot be passed to the C library"
        )


def _server_name(value: Any) -> Optional[bytes]:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"ssl_server_name must be a str, not {type(value).__name__}")
    try:
        name = value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError("ssl_server_name has no UTF-8 form (a lone surrogate)") from None
    _check_text(name, "ssl_server_name")
    return name


def _optional_bool(value: Any, what: str) -> Optional[bool]:
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{what} must be True, False or None, not {type(value).__name__}")
    return value


def _cert_required(cert_reqs: Any) -> Optional[bool]:
    """ssl_cert_reqs: True for "required", False for "none", None when not given."""
    if cert_reqs is None:
        return None
    if isinstance(cert_reqs, VerifyMode):
        mode = cert_reqs.name  # CERT_NONE, CERT_OPTIONAL, CERT_REQUIRED
    elif isinstance(cert_reqs, str):
        mode = "CERT_" + cert_reqs.upper()
    else:
        raise TypeError(
            "ssl_cert_reqs must be 'required', 'none', ssl.CERT_REQUIRED or ssl.CERT_NONE, "
            f"not {type(cert_reqs).__name__}"
        )
    if mode == "CERT_REQUIRED":
        return True
    if mode == "CERT_NONE":
        return False
    if mode == "CERT_OPTIONAL":
        raise InvalidArgumentError(
            "ssl_cert_reqs: 'optional' (CERT_OPTIONAL) has no meaning for a client, since a TLS "
            "server always presents a certificate; use 'required' (verify it) or 'none'"
        )
    raise InvalidArgumentError(
        f"ssl_cert_reqs must be 'required' or 'none' (or ssl.CERT_REQUIRED, ssl.CERT_NONE), "
        f"got {cert_reqs!r}"
    )


def _verify(cert_reqs: Any, check_hostname: Any) -> Optional[int]:
    """The C library's tls_verify for ssl_cert_reqs and ssl_check_hostname; None when neither
    was given."""
    required = _cert_required(cert_reqs)
    hostname = _optional_bool(check_hostname, "ssl_check_hostname")
    if required is False:
        if hostname:
            raise InvalidArgumentError(
                "ssl_check_hostname=True contradicts ssl_cert_reqs='none' (no certificate is "
                "checked at all): use ssl_cert_reqs='required'"
            )
        return _native.TLS_VERIFY_NONE
    if hostname is False:
        return _native.TLS_VERIFY_CA  # a trusted chain, whatever names it gives
    if required is None and hostname is None:
        return None
    return _native.TLS_VERIFY_FULL


def _min_version(value: Any) -> Optional[int]:
    if value is None:
        return None
    if not isinstance(value, TLSVersion):
        raise TypeError(f"ssl_min_version must be an ssl.TLSVersion, not {type(value).__name__}")
    if value is TLSVersion.TLSv1_2:
        return _native.TLS_1_2
    if value is TLSVersion.TLSv1_3:
        return _native.TLS_1_3
    raise InvalidArgumentError(
        "ssl_min_version must be ssl.TLSVersion.TLSv1_2 or ssl.TLSVersion.TLSv1_3 (rlock never "
        f"speaks a TLS older than 1.2), got {value!r}"
    )


def _check_scheme(
    scheme: str, ssl: Optional[bool], sentinel_ssl: Optional[bool], given: list[str]
) -> None:
    """The keywords against the URL's scheme. Unknown schemes are left to the C library."""
    if scheme not in _TLS_SCHEMES and scheme not in _PLAIN_SCHEMES:
        return
    url_tls = scheme in _TLS_SCHEMES
    if ssl is True and not url_tls:
        raise InvalidArgumentError(
            f"ssl=True, but the URL is plaintext ({scheme}://): use rediss://, "
            "rediss-sentinel:// or rediss-cluster://"
        )
    if ssl is False and url_tls:
        raise InvalidArgumentError(
            f"ssl=False, but the URL asks for TLS ({scheme}://): use redis:// for plaintext"
        )
    sentinel = scheme in _SENTINEL_SCHEMES
    if sentinel_ssl is not None and not sentinel:
        raise InvalidArgumentError(
            "sentinel_ssl applies to Sentinel URLs only (redis-sentinel://, rediss-sentinel://)"
        )
    if given and not url_tls and not sentinel_ssl:
        raise InvalidArgumentError(
            f"{given[0]} given, but TLS is off: use a rediss:// URL (rediss-sentinel://, "
            "rediss-cluster://)"
        )


def _check_url_options(
    url: str, paths: Dict[str, Optional[bytes]], verify: Optional[int], version: Optional[int]
) -> None:
    """A keyword and the URL's query option for the same setting must agree."""
    query = _query(url)
    for keyword, value in paths.items():
        option = _URL_OPTION[keyword]
        if value is None or option not in query:
            continue
        if urllib.parse.unquote_to_bytes(query[option]) != value:
            raise InvalidArgumentError(
                f"{keyword} and the URL's {option} disagree: set it in one place"
            )
    choices = (
        ("ssl_cert_reqs and ssl_check_hostname", verify, "tls_verify", _VERIFY_NAMES),
        ("ssl_min_version", version, "tls_min_version", _VERSION_NAMES),
    )
    for keywords, choice, option, names in choices:
        url_value = query.get(option)
        if choice is None or url_value not in names.values() or url_value == names[choice]:
            continue
        raise InvalidArgumentError(
            f"{keywords} ({option}={names[choice]}) and the URL's {option}={url_value} "
            "disagree: set it in one place"
        )


def native_options(
    url: str,
    *,
    ssl: Any,
    ssl_ca_certs: Any,
    ssl_ca_path: Any,
    ssl_certfile: Any,
    ssl_keyfile: Any,
    ssl_cert_reqs: Any,
    ssl_check_hostname: Any,
    ssl_server_name: Any,
    ssl_min_version: Any,
    sentinel_ssl: Any,
) -> Dict[str, Any]:
    """The TLS keyword arguments of ``_native.Client`` for these keywords and ``url``."""
    use_tls = _optional_bool(ssl, "ssl")
    sentinels = _optional_bool(sentinel_ssl, "sentinel_ssl")
    paths = {
        "ssl_ca_certs": _path(ssl_ca_certs, "ssl_ca_certs"),
        "ssl_ca_path": _path(ssl_ca_path, "ssl_ca_path"),
        "ssl_certfile": _path(ssl_certfile, "ssl_certfile"),
        "ssl_keyfile": _path(ssl_keyfile, "ssl_keyfile"),
        "ssl_server_name": _server_name(ssl_server_name),
    }
    verify = _verify(ssl_cert_reqs, ssl_check_hostname)
    version = _min_version(ssl_min_version)
    choices = {
        "ssl_cert_reqs": ssl_cert_reqs,
        "ssl_check_hostname": ssl_check_hostname,
        "ssl_min_version": version,
    }
    given = [k for k, v in {**paths, **choices}.items() if v is not None]
    _check_scheme(scheme_of(url), use_tls, sentinels, given)
    if paths["ssl_keyfile"] and not paths["ssl_certfile"] and "tls_cert_file" not in _query(url):
        raise InvalidArgumentError("ssl_keyfile given without ssl_certfile (the certificate)")
    _check_url_options(url, paths, verify, version)
    return {
        "tls": 1 if use_tls else 0,
        "tls_ca_file": paths["ssl_ca_certs"],
        "tls_ca_dir": paths["ssl_ca_path"],
        "tls_cert_file": paths["ssl_certfile"],
        "tls_key_file": paths["ssl_keyfile"],
        "tls_server_name": paths["ssl_server_name"],
        "tls_verify": _native.TLS_VERIFY_FULL if verify is None else verify,
        "tls_min_version": _native.TLS_1_2 if version is None else version,
        "sentinel_tls": (
            _native.SENTINEL_TLS_AUTO
            if sentinels is None
            else _native.SENTINEL_TLS_ON
            if sentinels
            else _native.SENTINEL_TLS_OFF
        ),
    }
