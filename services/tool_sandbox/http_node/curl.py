"""Parsing of the `http` node's cURL command line into one ``CurlRequest`` (spec §1.4)."""

from __future__ import annotations

import base64
import math
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

import msgspec


class CurlError(ValueError):
    """The cURL line cannot be turned into a request (no URL, bad quoting, bad scheme…)."""


class CurlRequest(msgspec.Struct, frozen=True):
    """One request as curl would send it; ``notes`` lists what was ignored or adjusted."""

    method: str
    url: str
    headers: list[tuple[str, str]] = msgspec.field(default_factory=list)
    body: str | None = None
    follow_redirects: bool = False
    timeout_s: float | None = None
    insecure: bool = False
    notes: list[str] = msgspec.field(default_factory=list)


_LONG: dict[str, str] = {
    "--request": "-X",
    "--header": "-H",
    "--data": "-d",
    "--data-ascii": "-d",
    "--user": "-u",
    "--max-time": "-m",
    "--user-agent": "-A",
    "--cookie": "-b",
    "--referer": "-e",
    "--location": "-L",
    "--location-trusted": "-L",
    "--get": "-G",
    "--insecure": "-k",
    "--head": "-I",
    "--fail": "-f",
    "--fail-with-body": "-f",
}
# Options this parser acts on that take a value (canonical names: short form when curl has one).
_VALUED = {"-X", "-H", "-d", "-u", "-m", "-A", "-b", "-e"}
_VALUED |= {"--data-raw", "--data-binary", "--data-urlencode", "--json", "--url", "--oauth2-bearer"}
# --compressed is accepted without effect: httpx always asks for and decodes compression.
_SWITCHES = {"-L", "-G", "-k", "-I", "-f", "--compressed"}
# Options that only change what curl prints: accepted silently.
_QUIET = {"-s", "-S", "-v", "-i", "-#", "-N", "-g"}
_QUIET |= {"--silent", "--show-error", "--verbose", "--include", "--progress-bar"}
_QUIET |= {"--no-progress-meter", "--no-buffer", "--globoff"}
# Known curl options that take a value but have no meaning here: the value must still be
# consumed, or it would be mistaken for the URL (e.g. `--proxy http://…`).
_IGNORED_VALUED = {"-o", "-w", "-x", "-T", "-F", "-c", "-D", "-E", "-K", "-r", "-U", "-z"}
_IGNORED_VALUED |= {"--output", "--write-out", "--proxy", "--upload-file", "--form"}
_IGNORED_VALUED |= {"--form-string", "--cookie-jar", "--dump-header", "--cert", "--key"}
_IGNORED_VALUED |= {"--config", "--range", "--proxy-user", "--time-cond", "--cacert"}
_IGNORED_VALUED |= {"--capath", "--resolve", "--connect-timeout", "--retry", "--retry-delay"}
_IGNORED_VALUED |= {"--retry-max-time", "--max-redirs", "--limit-rate", "--interface"}
_IGNORED_VALUED |= {"--url-query", "--trace", "--trace-ascii", "--stderr"}
_FORM = "application/x-www-form-urlencoded"
_SHORT_LONG = {"-F": "--form", "-T": "--upload-file", "-x": "--proxy", "-o": "--output"}
# A backslash ending a line joins it to the next; trailing blanks are forgiven (copy-paste).
_CONTINUATION = re.compile(r"\\[ \t]*\r?\n")


@dataclass
class _Draft:
    """The options seen so far; ``finish`` applies curl's defaults and precedence."""

    method: str | None = None
    urls: list[str] = field(default_factory=list)
    headers: list[tuple[str, str]] = field(default_factory=list)
    data: list[str] = field(default_factory=list)
    # The option each data piece came from (--data-urlencode pieces are already encoded).
    data_kinds: list[str] = field(default_factory=list)
    json_body: bool = False
    get: bool = False
    head: bool = False
    follow: bool = False
    timeout: str | None = None
    insecure: bool = False
    # `user:password` for -u (encoded in `finish`), or a complete header value.
    basic: str | None = None
    auth: str | None = None
    implicit: dict[str, str] = field(default_factory=dict)
    cookies: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def apply(self, opt: str, value: str) -> None:
        if opt == "-X":
            self.method = value.upper()
        elif opt == "-H":
            self._header(value)
        elif opt in ("-d", "--data-binary", "--data-raw", "--json"):
            if value.startswith("@") and opt != "--data-raw":
                # Reading local files from a workflow would leak the sandbox's disk.
                self.notes.append(f"{opt} {value!r}: files are not read, sent as literal text")
            self.data.append(value)
            self.data_kinds.append(opt)
            self.json_body = self.json_body or opt == "--json"
        elif opt == "--data-urlencode":
            self.data.append(_urlencode(value))
            self.data_kinds.append(opt)
        elif opt == "--url":
            self.urls.append(value)
        elif opt == "-u":
            if ":" not in value:
                # curl would prompt for the password; a workflow cannot, so it is empty.
                self.notes.append("-u without a password: an empty password is used")
                value += ":"
            self.basic, self.auth = value, None
        elif opt == "--oauth2-bearer":
            self.basic, self.auth = None, f"Bearer {value}"
        elif opt == "-m":
            self.timeout = value
        elif opt == "-A":
            self.implicit["User-Agent"] = value
        elif opt == "-e":
            self.implicit["Referer"] = value
        elif opt == "-b":
            if "=" in value:
                self.cookies.append(value)
            else:
                self.notes.append(f"-b {value!r}: cookie files are not read")
        elif opt == "-L":
            self.follow = True
        elif opt == "-G":
            self.get = True
        elif opt == "-I":
            self.head = True
        elif opt == "-f":
            self.notes.append("-f/--fail ignored: 4xx/5xx responses are returned, not errors")
        elif opt == "-k":
            self.insecure = True
            self.notes.append("-k/--insecure recorded; TLS certificates are still verified")
        elif opt in _IGNORED_VALUED:
            self.notes.append(f"{_SHORT_LONG.get(opt, opt)} is not supported and was ignored")

    def _header(self, raw: str) -> None:
        name, colon, value = raw.partition(":")
        name, value = name.strip(), value.strip()
        if raw.startswith("@"):
            self.notes.append(f"-H {raw!r}: header files are not read")
        elif colon and name and value:
            self.headers.append((name, value))
        elif not colon and name.endswith(";"):
            # curl's spelling for a header sent with an empty value.
            self.headers.append((name[:-1].strip(), ""))
        elif colon and name:
            self.notes.append(f"header {name!r} has no value and is not sent (curl removes it)")
        else:
            self.notes.append(f"malformed header {raw!r} ignored")

    def finish(self) -> CurlRequest:
        timeout_s = _seconds(self.timeout) if self.timeout is not None else None
        if self.basic is not None:
            self.auth = "Basic " + base64.b64encode(self.basic.encode()).decode("ascii")
        if not self.urls:
            raise CurlError("invalid cURL command: no URL (give an http:// or https:// URL)")
        if len(self.urls) > 1:
            raise CurlError(f"invalid cURL command: several URLs given: {', '.join(self.urls)}")
        url = _check_url(self.urls[0])
        data = "&".join(self.data) if self.data else None
        body: str | None = data
        if self.get and data is not None:
            url += ("&" if "?" in url else "?") + data
            body = None
        method = self.method or (
            "HEAD" if self.head else "GET" if self.get else "POST" if body is not None else "GET"
        )
        headers = list(self.headers)
        present = {name.lower() for name, _ in headers}

        def default(name: str, value: str) -> None:
            # Explicit -H headers win over the ones curl derives from other options.
            if name.lower() not in present:
                headers.append((name, value))
                present.add(name.lower())

        for name, value in self.implicit.items():
            default(name, value)
        if self.cookies:
            default("Cookie", "; ".join(self.cookies))
        if self.auth is not None:
            default("Authorization", self.auth)
        if body is not None:
            json_type = "application/json"
            default("Content-Type", json_type if self.json_body else _FORM)
            if self.json_body:
                default("Accept", json_type)
        return CurlRequest(
            method=method,
            url=url,
            headers=headers,
            body=body,
            follow_redirects=self.follow,
            timeout_s=timeout_s,
            insecure=self.insecure,
            notes=self.notes,
        )


def _urlencode(value: str) -> str:
    # curl's rules: `name=content` encodes only the content, `=content` drops the `=`.
    name, eq, content = value.partition("=")
    if not eq:
        return quote(value, safe="")
    return f"{name}={quote(content, safe='')}" if name else quote(content, safe="")


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise CurlError(
            f"invalid cURL command: -m needs a positive number of seconds, not {value!r}"
        )
    return seconds


def _check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise CurlError(f"invalid cURL command: only http(s) URLs are supported, got {url!r}")
    return url


def _tokens(command: str) -> list[str]:
    # shlex would keep a backslash-escaped newline inside the token; the shell drops it.
    text = _CONTINUATION.sub(" ", command)
    try:
        tokens = shlex.split(text, posix=True)
    except ValueError as exc:
        raise CurlError(f"invalid cURL command: unbalanced quotes ({exc})") from None
    if tokens and tokens[0].lower() == "curl":
        tokens = tokens[1:]
    return tokens


def parse_curl(command: str) -> CurlRequest:
    """Parse one cURL command line (the leading ``curl`` is optional)."""
    return parse_draft(command).finish()


def parse_draft(command: str) -> _Draft:
    """The options of one cURL command line, before curl's defaults are applied."""
    draft = _Draft()
    tokens = _tokens(command)
    i = 0
    options_done = False

    def take(opt: str, rest: str) -> str:
        nonlocal i
        if rest:
            return rest
        i += 1
        if i >= len(tokens):
            raise CurlError(f"invalid cURL command: option {opt} needs a value")
        return tokens[i]

    while i < len(tokens):
        token = tokens[i]
        if options_done or not token.startswith("-") or token == "-":
            _positional(draft, token)
        elif token == "--":
            options_done = True
        elif token.startswith("--"):
            opt = _LONG.get(token, token)
            if opt in _VALUED or opt in _IGNORED_VALUED:
                draft.apply(opt, take(token, ""))
            elif opt in _SWITCHES:
                draft.apply(opt, "")
            elif opt not in _QUIET:
                draft.notes.append(f"unknown option {token} ignored")
        else:
            _short_cluster(draft, token, take)
        i += 1
    return draft


def _short_cluster(draft: _Draft, token: str, take: Callable[[str, str], str]) -> None:
    # curl reads `-sSL` as three switches and `-XPOST` as `-X POST`.
    for pos in range(1, len(token)):
        opt = "-" + token[pos]
        if opt in _VALUED or opt in _IGNORED_VALUED:
            draft.apply(opt, take(opt, token[pos + 1 :]))
            return
        if opt in _SWITCHES:
            draft.apply(opt, "")
        elif opt not in _QUIET:
            draft.notes.append(f"unknown option {opt} ignored")


def _positional(draft: _Draft, token: str) -> None:
    if "://" in token:
        draft.urls.append(token)
    else:
        draft.notes.append(f"argument {token!r} ignored (a URL needs http:// or https://)")
