"""Store URLs: checked before a client library sees them, shown without their credentials.

Why this exists: libpq and redis-py put the URL, or the piece they choke on, into their error
text (``invalid percent-encoded token: "<the password>"``), and a store used to append that text
to its own error, so a malformed URL printed its password in tracebacks, logs and CLI output.
Everything that turns a URL or a library's error into text we show goes through here:

* :func:`postgres_url` and :func:`redis_url` check a URL the way the client library will read
  it and raise :class:`ConfigurationError` naming what is wrong. Those messages never quote the
  URL or a part of it: in a malformed URL we cannot tell where the password ends (an unencoded
  ``/`` makes libpq read the password's first half as a port), so any echoed piece might be a
  piece of the password.
* :class:`StoreUrl` carries the password-free form for messages (``display``) and every form
  of the credentials found in the URL (``secrets``); :meth:`StoreUrl.redact` removes them from
  a library's error text and :meth:`StoreUrl.cause` says whether that error may be chained.
* :func:`secrets_in` and :func:`describe` do the same for any target text (the CLI, unknown
  schemes), without checking it.
* :func:`sqlite_file` is the one reading of a ``sqlite:///`` URL (the file it names) and
  :func:`sqlite_url` the URL shown for a file, which reads back to the same file.
"""

from __future__ import annotations

import importlib
import os
import re
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, unquote_plus

from ..errors import ConfigurationError

__all__ = [
    "LIBPQ_KEYWORDS",
    "REDACTED",
    "StoreUrl",
    "describe",
    "libpq_pairs",
    "libpq_target",
    "libpq_url",
    "postgres_url",
    "redact",
    "redis_options",
    "redis_url",
    "safe_cause",
    "secrets_in",
    "sqlite_file",
    "sqlite_url",
]

#: What a credential is replaced with in any text we show.
REDACTED = "***"

# Query / key=value parameters whose value is a credential (password=, sslpassword=, token=...).
_SECRET_KEY = re.compile(r"pass|pwd|secret|token|scram_(?:client|server)_key", re.IGNORECASE)
_QUERY_PARAM = re.compile(r"(?:^|[?&;])([^=&;?#]*)=([^&;#]*)")
# libpq key=value form anywhere in a text: password=xyz or password='x y\'z'. A key starts where
# a run of letters starts (the lookbehind) and nothing gives back (possessive): every character
# is looked at a bounded number of times, where plain ``[A-Za-z_]+`` retried each letter of a
# long run as a key start (quadratic: 64k letters in one CLI argument took a minute).
_DSN_PARAM = re.compile(r"(?<![A-Za-z_])([A-Za-z_]++)\s*+=\s*+('(?:[^'\\]|\\.)*+'?|\S*+)")
# One pair of a whole libpq key=value string, as libpq reads it: a quoted value ends at its
# closing quote (an unclosed one runs to the end), an unquoted one at whitespace; \ escapes.
_LIBPQ_PAIR = re.compile(
    r"\s*+([^\s=]++)\s*+=\s*+(?:'((?:[^'\\]|\\[\s\S])*+)(?:'|\Z)|((?:[^\s\\]|\\[\s\S]?)*+))"
)
_BLANK_END = re.compile(r"\s*+\Z")
_ESCAPED = re.compile(r"\\([\s\S])")
#: libpq's connection keywords (PostgreSQL 18, ``PQconndefaults``, plus the old ``requiressl``).
LIBPQ_KEYWORDS = frozenset(
    """application_name channel_binding client_encoding connect_timeout dbname
    fallback_application_name gssdelegation gssencmode gsslib host hostaddr keepalives
    keepalives_count keepalives_idle keepalives_interval krbsrvname load_balance_hosts
    max_protocol_version min_protocol_version oauth_client_id oauth_client_secret oauth_issuer
    oauth_scope options passfile password port replication require_auth requirepeer requiressl
    scram_client_key scram_server_key service ssl_max_protocol_version ssl_min_protocol_version
    sslcert sslcertmode sslcompression sslcrl sslcrldir sslkey sslkeylogfile sslmode
    sslnegotiation sslpassword sslrootcert sslsni target_session_attrs tcp_user_timeout
    user""".split()  # noqa: SIM905 (52 words read better as text)
)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")


@dataclass(frozen=True)
class StoreUrl:
    """A checked store URL: its scheme, a form safe to show, and the credentials it holds."""

    scheme: str
    #: The URL without password and query (``postgresql://app@db:5432/chat``).
    display: str
    #: Every credential in the URL, raw and percent-decoded, longest first.
    secrets: tuple[str, ...]

    def redact(self, text: str) -> str:
        """``text`` (a client library's error) with every credential replaced by ``***``."""
        return redact(text, self.secrets)

    def cause(self, exc: BaseException) -> BaseException | None:
        """``exc`` if chaining it is safe, else ``None`` (for ``raise ... from``)."""
        return safe_cause(exc, self.secrets)


def _variants(raw: str, *, plus: bool = False) -> set[str]:
    """A credential as written and as each decoder (libpq, urllib, redis-py) will read it."""
    found = {raw, unquote(raw), unquote(raw, errors="replace")}
    if plus:
        found.add(unquote_plus(raw))
    return {value for value in found if value}


def _after_scheme(url: str) -> tuple[str, str] | None:
    match = _SCHEME.match(url)
    return (match.group(1).lower(), url[match.end() :]) if match else None


def secrets_in(text: str) -> tuple[str, ...]:
    """Every credential-looking part of ``text`` (a URL or a libpq key=value string).

    Malformed URLs are read every way a client library might read them (libpq ends the
    user:password part at the first ``@``, urllib and redis-py at the last ``@`` of the host
    part, and a password with an unencoded ``/`` ends at an ``@`` further on), so the password
    is found whichever reading a library's error text comes from. Query and key=value
    parameters named like a credential (``password``, ``sslpassword``, ``token``...) count too.
    Longest first, so replacing them in order never leaves a piece of a longer one behind.
    """
    found: set[str] = set()
    split = _after_scheme(text)
    if split is not None:
        rest = split[1]
        userinfos = []
        at, slash = rest.find("@"), rest.find("/")
        if at >= 0 and (slash < 0 or at < slash):  # libpq
            userinfos.append(rest[:at])
        netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]
        if "@" in netloc:  # urllib / redis-py
            userinfos.append(netloc.rpartition("@")[0])
        if "@" in rest:  # a password holding / ? or # ends at a later @
            userinfos.append(rest.rpartition("@")[0])
        for userinfo in userinfos:
            password = userinfo.partition(":")[2]  # none without a ":"
            if password:
                found |= _variants(password)
        for key, value in _QUERY_PARAM.findall(rest):
            if _SECRET_KEY.search(unquote(key)) and value:
                found |= _variants(value, plus=True)
    else:
        for key, value in _DSN_PARAM.findall(text):
            if _SECRET_KEY.search(key) and value:
                found.add(value)
                if value.startswith("'"):
                    found.add(re.sub(r"\\(.)", r"\1", value.strip("'")))
        for key, raw, value in _libpq_values(text):  # as libpq reads it: x\ y is "x y"
            if _SECRET_KEY.search(key):
                found |= {raw, value}
    return _ordered(found)


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` replaced by ``***`` (longest first)."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, REDACTED)
    return text


def safe_cause(exc: BaseException, secrets: Iterable[str]) -> BaseException | None:
    """``exc`` when its printed traceback (chain included) holds none of ``secrets``, else None.

    A library's own exception stays chained for debugging unless printing it would show a
    credential: a user printing our error's traceback also prints the chained cause.
    """
    printed = "".join(traceback.format_exception(exc))
    return None if any(s and s in printed for s in secrets) else exc


def describe(text: str) -> str:
    """Any target text, safe to show: the credentials it holds replaced by ``***``."""
    return redact(text, secrets_in(text))


def libpq_pairs(text: str) -> list[tuple[str, str]] | None:
    """``text``'s ``(key, value)`` pairs when the whole of it reads as a libpq key=value
    connection string whose keys are all libpq keywords (in any case), else None.

    Why: such a string is a PostgreSQL target written without a URL; taken as a path, it would
    name a directory after its password. Keys come lowercased, values as libpq reads them
    (quotes and backslash escapes removed). One pass: each pair is matched where the last ended.
    """
    found = _libpq_values(text)
    return [(key, value) for key, _, value in found] if found else None


def _libpq_values(text: str) -> list[tuple[str, str, str]]:
    """:func:`libpq_pairs` with each value as written too: ``(key, raw, value)``; [] if not one."""
    found: list[tuple[str, str, str]] = []
    pos = 0
    while not _BLANK_END.match(text, pos):
        match = _LIBPQ_PAIR.match(text, pos)
        if match is None or match.group(1).lower() not in LIBPQ_KEYWORDS:
            return []
        quoted, plain = match.group(2), match.group(3)
        raw = quoted if quoted is not None else plain
        found.append((match.group(1).lower(), raw, _ESCAPED.sub(r"\1", raw)))
        pos = match.end()
    return found


def libpq_target(text: str) -> str | None:
    """The ``postgresql://`` URL (password left out) to suggest when ``text`` is a libpq
    key=value connection string given where a path or URL goes, else None.

    Two pairs or more (``host=db dbname=chat``), or any credential (``password=...``): one pair
    of another keyword stays a path, as a directory named like a partition (``service=prod/``,
    ``user=alice``) is more likely than a connection string of one setting. A text that starts
    like one and names a credential counts, though libpq would refuse the whole (``password=a
    b``: a stray token); taken as a path it was a directory named after the password.
    """
    pairs, first = libpq_pairs(text), _LIBPQ_PAIR.match(text)
    if not pairs and first is not None and first.group(1).lower() in LIBPQ_KEYWORDS:
        loose = [(k.lower(), v) for k, v in _DSN_PARAM.findall(text) if k.lower() in LIBPQ_KEYWORDS]
        pairs = loose if any(_SECRET_KEY.search(k) and v for k, v in loose) else None
    if not pairs or (len(pairs) < 2 and not any(_SECRET_KEY.search(k) for k, _ in pairs)):
        return None
    return libpq_url(pairs)


def libpq_url(pairs: Iterable[tuple[str, str]]) -> str:
    """The ``postgresql://`` URL of a libpq key=value string's user, hosts, ports and database,
    without its password (what an error suggests writing instead)."""
    given = dict(pairs)
    secrets = {value for key, value in given.items() if _SECRET_KEY.search(key) and value}
    hosts = given.get("host") or given.get("hostaddr") or ""
    shown = ",".join(
        (f"[{h}]" if ":" in h else quote(h, safe="")) + (f":{quote(p, safe='')}" if p else "")
        for h, p in zip(hosts.split(","), _spread(given.get("port", ""), hosts), strict=True)
    )
    user = f"{quote(given['user'], safe='')}@" if given.get("user") else ""
    url = f"postgresql://{user}{shown}/{quote(given.get('dbname', ''), safe='')}"
    return redact(url, secrets | {quote(s, safe="") for s in secrets})


def _scrub(text: str, secrets: Iterable[str]) -> str:
    """A library's parse error without what it quotes (a quoted piece may be part of the
    password even when the whole password is not in it) and without the credentials."""
    return " ".join(_QUOTED.sub('"…"', redact(text, secrets)).split())


def _check_text(url: str, kind: str) -> None:
    """A NUL ends the string for libpq and hiredis, so what follows it would be dropped."""
    if "\x00" in url:
        raise ConfigurationError(f"a {kind} URL must not contain a NUL character")


def _check_port(port: str, scheme: str, *, allow_empty: bool) -> None:
    if port == "" and allow_empty:
        return
    if not (port.isascii() and port.isdigit()):
        raise ConfigurationError(f"{scheme} URL: the port is not a number (host:port, digits)")
    if not 1 <= int(port) <= 65535:
        raise ConfigurationError(f"{scheme} URL: the port is out of range (1-65535)")


def _split_host_port(hostport: str, scheme: str) -> tuple[str, str]:
    """``host[:port]`` or ``[v6][:port]``: the host and the port text (may be empty)."""
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise ConfigurationError(f"{scheme} URL: an IPv6 host is missing its closing ]")
        host, after = hostport[1:end], hostport[end + 1 :]
        if after and not after.startswith(":"):
            raise ConfigurationError(f"{scheme} URL: unexpected text after the IPv6 host's ]")
        return host, after[1:]
    if "]" in hostport:
        raise ConfigurationError(f"{scheme} URL: a ] without [ in the host")
    host, _, port = hostport.partition(":")
    return host, port


def _check_userinfo(userinfo: str, scheme: str) -> None:
    if any(c.isspace() for c in userinfo):
        raise ConfigurationError(
            f"{scheme} URL: the user name or password contains a space; percent-encode it (%20)"
        )
    if _BAD_PERCENT.search(userinfo):
        raise ConfigurationError(
            f"{scheme} URL: the user name or password has a % not followed by two hex digits; "
            "write a literal % as %25"
        )
    if "%00" in userinfo:
        raise ConfigurationError(f"{scheme} URL: the user name or password contains %00")


def _check_host(host: str, scheme: str) -> None:
    if any(c.isspace() for c in host):
        raise ConfigurationError(f"{scheme} URL: the host contains a space")
    if host and not host.startswith("/") and ":" not in host:  # a socket directory, IPv6
        try:
            host.encode("idna")
        except UnicodeError:
            raise ConfigurationError(f"{scheme} URL: the host is not a valid DNS name") from None


_PG_SCHEMES = ("postgresql", "postgres")
_ENCODE_HINT = "percent-encode @ / ? # in the password (%40 %2F %3F %23)"


def postgres_url(url: str) -> StoreUrl:
    """Check a PostgreSQL URL (or libpq key=value string) as libpq will read it.

    libpq's own parse is the final word (``conninfo_to_dict``, no connection), but it runs
    after our checks so the common mistakes get a message that names the fix; its own error
    text is kept without anything it quotes. Beyond what libpq rejects, we reject what libpq
    would accept but misread so that a piece of the password ends up somewhere it is printed
    (an ``@`` in a host, port or database name means the password had an unencoded ``@``,
    ``/`` or ``#``), and ports that are not numbers in range (libpq only finds out when it
    connects, and then quotes the bad "port").
    """
    if not isinstance(url, str):
        raise ConfigurationError(
            f"a PostgreSQL target is a postgresql:// URL string, got {type(url).__name__}"
        )
    _check_text(url, "PostgreSQL")
    secrets = set(secrets_in(url))
    split = _after_scheme(url)
    scheme = "postgresql"
    if split is not None:
        scheme, rest = split
        if scheme not in _PG_SCHEMES:
            raise ConfigurationError(f"{scheme}:// is not a PostgreSQL URL; use postgresql://")
        at, slash = rest.find("@"), rest.find("/")
        userinfo = rest[:at] if at >= 0 and (slash < 0 or at < slash) else ""
        if userinfo:
            _check_userinfo(userinfo, scheme)
        hosts = re.split(r"[/?]", rest[len(userinfo) + 1 if userinfo else 0 :], maxsplit=1)[0]
        if "@" in hosts:
            raise ConfigurationError(f"{scheme} URL: an @ in the host part; {_ENCODE_HINT}")
        for hostport in hosts.split(","):
            host, port = _split_host_port(hostport, scheme)
            _check_host(unquote(host), scheme)
            _check_port(port, scheme, allow_empty=True)
    try:
        from psycopg.conninfo import conninfo_to_dict

        info: dict[str, Any] = conninfo_to_dict(url)
    except ImportError:
        raise ConfigurationError(
            "postgresql:// targets need psycopg 3: pip install 'context-manager[stores]'"
        ) from None
    except UnicodeDecodeError:
        raise ConfigurationError(
            f"{scheme} URL: a percent-encoded part is not UTF-8 text (%FF and the like)"
        ) from None
    except Exception as exc:  # psycopg.ProgrammingError: libpq cannot parse it
        raise ConfigurationError(
            f"{scheme} URL rejected by libpq: {_scrub(str(exc), secrets)}"
        ) from None
    for key in ("password", "sslpassword"):
        if info.get(key):
            secrets.add(str(info[key]))
    for key in ("host", "hostaddr", "port", "dbname", "options"):
        if "@" in str(info.get(key, "")):
            what = {"dbname": "database name"}.get(key, key)
            raise ConfigurationError(f"{scheme} URL: an @ in the {what}; {_ENCODE_HINT}")
    for port in str(info.get("port") or "").split(","):
        _check_port(port, scheme, allow_empty=True)
    for host in str(info.get("host") or "").split(","):
        _check_host(host, scheme)
    user = f"{info['user']}@" if info.get("user") else ""
    hosts = str(info.get("host") or "")
    ports = str(info.get("port") or "")
    shown = ",".join(
        (f"[{h}]" if ":" in h else h) + (f":{p}" if p else "")
        for h, p in zip(hosts.split(","), _spread(ports, hosts), strict=True)
    )
    display = f"postgresql://{user}{shown}/{info.get('dbname', '')}"
    return StoreUrl(scheme, redact(display, secrets), _ordered(secrets))


def _spread(ports: str, hosts: str) -> list[str]:
    """libpq's port list against its host list: one port for all, or one per host."""
    count = len(hosts.split(","))
    parts = ports.split(",") if ports else [""]
    return parts if len(parts) == count else [parts[0]] * count


def _ordered(secrets: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({s for s in secrets if s}, key=len, reverse=True))


_REDIS_SCHEMES = ("redis", "rediss", "unix")


def redis_url(url: str) -> StoreUrl:
    """Check a Redis URL as redis-py will read it (``urllib.parse``: the last ``@`` of the
    host part ends the credentials).

    redis-py raises a bare ``ValueError`` for a bad port or an unclosed ``[`` (from urllib),
    ignores a database number that is not a number (you silently get database 0) and fails
    only at the first command on a host that is not a valid DNS name; each is a
    :class:`ConfigurationError` here, raised before any client exists.
    """
    if not isinstance(url, str):
        raise ConfigurationError(
            f"a Redis target is a redis:// URL string, got {type(url).__name__}"
        )
    _check_text(url, "Redis")
    secrets = set(secrets_in(url))
    split = _after_scheme(url)
    if split is None or split[0] not in _REDIS_SCHEMES:
        raise ConfigurationError("a Redis URL starts with redis://, rediss:// or unix://")
    scheme, rest = split
    end = re.search(r"[/?#]", rest)
    netloc, tail = (rest[: end.start()], rest[end.start() :]) if end else (rest, "")
    userinfo, at, hostport = netloc.rpartition("@")
    if at and ("[" in userinfo or "]" in userinfo):
        raise ConfigurationError(
            f"{scheme} URL: the user name or password contains [ or ]; percent-encode them "
            "(%5B %5D)"
        )
    path, _, query = tail.partition("?")
    path = path.partition("#")[0]
    if "@" in path:
        raise ConfigurationError(f"{scheme} URL: an @ after the host; {_ENCODE_HINT}")
    db = unquote(path).replace("/", "")
    host = port = ""
    if scheme != "unix":
        host, port = _split_host_port(hostport, scheme)
        _check_host(unquote(host), scheme)
        _check_port(port, scheme, allow_empty=True)
        if db and not (db.isascii() and db.isdigit()):
            raise ConfigurationError(
                f"{scheme} URL: the database number (the path, /0 to /15 by default) is not a "
                "number"
            )
    options: dict[str, str] = {}  # redis-py reads each option's first value
    for key, value in parse_qsl(query.partition("#")[0]):
        if key == "db" and not (value.isascii() and value.isdigit()):
            raise ConfigurationError(f"{scheme} URL: db= is not a number")
        options.setdefault(key, value)
    # Shown as redis-py reads it, so the target names where the records go: db= wins over the
    # path (redis://h/0?db=5 writes to database 5), host= and port= count where the URL has none.
    chosen = options.get("db")
    if scheme == "unix":
        display = f"unix://{path}" + (f"?db={chosen}" if chosen is not None else "")
    else:
        host, port = host or options.get("host", ""), port or options.get("port", "")
        _check_port(port, scheme, allow_empty=True)
        shown = f"[{host}]" if ":" in host else host
        path = path if chosen is None else f"/{chosen}"
        display = f"{scheme}://{shown}{':' + port if port else ''}{path}"
    return StoreUrl(scheme, redact(display, secrets), _ordered(secrets))


def redis_options(url: str, info: StoreUrl, *, asyncio: bool = False) -> None:
    """Make, without connecting, the connection redis-py would make for ``url``'s options:
    redis-py connects at the first command, so an option it does not take (``?foo=1``,
    ``ssl_cert_reqs`` on ``redis://``) was a ``TypeError`` and a timeout a socket refuses (``-1``,
    ``nan``) a ``ValueError`` there. Nothing connects here: what fails is the URL's."""
    module = importlib.import_module(f"redis{'.asyncio' if asyncio else ''}.connection")
    try:
        pool = module.ConnectionPool.from_url(url)  # as a client makes it
        pool.connection_class(**pool.connection_kwargs)
        for key in ("socket_timeout", "socket_connect_timeout"):
            value = pool.connection_kwargs.get(key)
            if value is not None and not 0 < value <= 1e9:  # 0 is a non-blocking socket
                raise ValueError(f"{key} must be a number of seconds above 0 (at most 1e9)")
    except Exception as exc:
        message = f"{info.display}: redis-py cannot use the URL: {info.redact(str(exc))}"
        raise ConfigurationError(message) from info.cause(exc)


_SQLITE_FORMS = "write sqlite:///relative.db or sqlite:////absolute/path.db"


def sqlite_file(url: str) -> str:
    """The file a ``sqlite:///...`` URL names: the rest of the URL after ``sqlite:///`` (a
    relative path; ``sqlite:////`` starts an absolute one), taken as it is.

    One rule, so a URL means one file. A query string or a fragment is refused: SQLite's URI
    options (``?mode=ro``, ``?cache=shared``) were never applied, the text became part of the
    file name and writes went to a file nobody meant. ``:memory:`` and an empty path are
    refused: an in-memory database is private to one connection and gone at close, while a
    store is reopened (it was a file named ``:memory:`` in the working directory). The path is
    not percent-decoded: ``%`` is part of the name, as it always was here (decoding would send a
    file written as ``a%20b.db`` to ``a b.db``, and turn ``%2F`` in a name an application
    filtered for ``/`` into a directory). Messages show the URL once, as :func:`describe` does
    (credentials left out).
    """
    rest, shown = url[len("sqlite://") :], describe(url)
    if rest and not rest.startswith("/"):  # a host, or user:password@host
        raise ConfigurationError(f"{shown}: {_SQLITE_FORMS}")
    end = re.search(r"[?#]", rest)
    if end is not None:
        what = (
            "query string (?...): SQLite URI options such as mode=ro or cache=shared are not "
            "supported"
            if end.group() == "?"
            else "fragment (#...)"
        )
        raise ConfigurationError(
            f"{shown}: a sqlite:/// URL names a file and takes no {what}; a file whose name "
            "holds ? or # cannot be named by a URL: rename it"
        )
    path = rest[1:]
    if path in ("", ":memory:"):
        raise ConfigurationError(
            f"{shown}: a store needs a file (an in-memory database is private to one "
            f"connection and lost when it closes); {_SQLITE_FORMS}"
        )
    return path


def sqlite_url(path: str | os.PathLike[str]) -> str:
    """The ``sqlite:///`` URL of ``path`` (a target to show; given back, it names the file)."""
    return f"sqlite:///{os.fspath(path)}"
