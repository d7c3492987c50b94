"""One GET under a `RequestPolicy`, over any transport: the status rules every service shares (429 and 5xx
retried, `Backoff` and `Retry-After` honoured), and a body read as it streams in, decompressed, capped in
size and in time. What a status means beyond that is the caller's (`parse`)."""

from __future__ import annotations

import contextlib
import email.utils
import logging
import math
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import Any, Protocol, TypeVar
from urllib.parse import urlencode

from ..secrets import excerpt
from .policy import RequestFailed, RequestPolicy, Transient

log = logging.getLogger("zotsync.net")

_T = TypeVar("_T")
ERROR_BODY = 64 * 1024  # bytes of an error's body read, so that the connection stays usable


class Response(Protocol):
    """What a transport hands over once the status line and headers are in."""

    status: int
    reason: str
    headers: Mapping[str, str]  # case-insensitive lookups

    def chunks(self) -> Iterator[bytes]:
        """The body as it arrives, still compressed."""
        ...


class Transport(Protocol):
    """An HTTP client library behind one call. It raises `Transient` (with `unreachable` when no
    connection could be made) for what is worth retrying, and `RequestFailed("invalid", …)` for a request
    it cannot send; its own exceptions never escape, and neither does anything they quote."""

    def open(
        self, url: str, params: Mapping[str, Any], headers: Mapping[str, str], timeout: float, connect: float
    ) -> contextlib.AbstractContextManager[Response]: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes  # decompressed; at most ERROR_BODY bytes of an error's


class HttpClient:
    """GETs through `transport` under `policy`."""

    def __init__(self, transport: Transport, policy: RequestPolicy) -> None:
        self.transport = transport
        self.policy = policy

    def close(self) -> None:
        self.transport.close()

    def get(
        self,
        url: str,
        params: Mapping[str, Any],
        headers: Mapping[str, str],
        parse: Callable[[Reply], _T],
        shown: str,
    ) -> _T:
        """`parse(reply)` of a GET, retried as the policy says. `parse` runs within each attempt: it may
        raise `Transient` (a malformed body worth asking for again) or an error of its own. `shown`
        names the request in messages (a path: never the headers, which may hold a key)."""

        def attempt() -> _T:
            return parse(self._attempt(url, params, headers, shown))

        try:
            return self.policy.retrying(attempt, describe=f"GET {shown}")
        except RequestFailed as failure:
            failure.shown = failure.shown or f"GET {shown}"
            if failure.kind == "failed":
                failure.reason = f"{failure.reason} for GET {shown} {failure.after}"
            raise

    def _attempt(self, url: str, params: Mapping[str, Any], headers: Mapping[str, str], shown: str) -> Reply:
        policy, limits = self.policy, self.policy.limits
        policy.check_given_up()
        policy.pace()
        started = policy.clock.monotonic()
        left = policy.left()
        if left <= 0:
            raise policy.deadline_passed()
        ends = min(started + left, started + limits.request_deadline)
        policy.count()
        read = min(limits.timeout, left)
        logged = f"{shown}?{urlencode(params)}" if params else shown
        with self.transport.open(url, params, headers, read, min(read, 10.0)) as response:
            policy.answered = True
            status, response_headers = response.status, response.headers
            log.debug("GET %s → %d, %.0f ms", logged, status, (policy.clock.monotonic() - started) * 1000)
            backoff = wait_header(response_headers, "Backoff", policy)
            if backoff:
                policy.hold(backoff, "Backoff")  # the server is busy: slow down before the next request
            if status == 304:
                body = b""
            elif 200 <= status < 300:
                body = self._read(response, shown, ends, limits.max_body)
            else:
                body = self._read(response, shown, ends, ERROR_BODY, quiet=True)
        if status == 429 or status >= 500:
            retry_after = wait_header(response_headers, "Retry-After", policy)
            if retry_after is not None:
                policy.hold(retry_after, "Retry-After")
            raise Transient(
                f"HTTP {status}" + (f" {response.reason}" if response.reason else ""), retry_after
            )
        return Reply(status, response.reason, response_headers, body)

    def _read(self, response: Response, shown: str, ends: float, limit: int, quiet: bool = False) -> bytes:
        """The body, decompressed as it streams in: at most `limit` bytes and until `ends` (a body that
        drips in, or expands a thousandfold, fails this request rather than the machine). `quiet`: cut a
        longer body short instead of failing."""
        policy = self.policy
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("identity", "", "gzip", "x-gzip", "deflate"):
            raise RequestFailed(
                "body",
                f"GET {shown} answered in an encoding zotsync did not ask for ({excerpt(encoding, 20)})",
            )
        inflater = Inflater() if encoding not in ("identity", "") else None
        parts, size = [], 0
        try:
            for raw in response.chunks():
                policy.check_given_up()
                policy.check_deadline()
                if policy.clock.monotonic() > ends:
                    limit_s = policy.limits.request_deadline
                    raise Transient(f"the response took longer than {limit_s:g} s to arrive")
                data = inflater.feed(raw, limit - size) if inflater else raw
                size += len(data)
                if size > limit:
                    if quiet:
                        parts.append(data[: limit - size])
                        break
                    raise RequestFailed(
                        "body",
                        f"the response to GET {shown} is larger than {limit // 2**20} MB (decompressed); "
                        "refusing it",
                    )
                parts.append(data)
        except zlib.error:
            raise Transient("a malformed compressed body") from None
        return b"".join(parts)


def wait_header(headers: Mapping[str, str], name: str, policy: RequestPolicy) -> float | None:
    """Backoff or Retry-After in seconds (Retry-After may be an HTTP date); None when absent or unreadable
    (then our own backoff applies). May be infinite: `Backoff: inf` is a wait without end."""
    value = headers.get(name)
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - policy.clock.now()).total_seconds()
    return None if math.isnan(seconds) else max(0.0, seconds)


class Inflater:
    """gzip or zlib data decompressed a piece at a time, never more than asked for (a bomb stays small)."""

    def __init__(self) -> None:
        self._z = zlib.decompressobj(zlib.MAX_WBITS | 32)  # | 32: either header

    def feed(self, data: bytes, room: int) -> bytes:
        """Up to `room` + 1 bytes out of `data` (one past `room` says the body is too large)."""
        out = []
        while data:
            chunk = self._z.decompress(data, max(room, 0) + 1)
            out.append(chunk)
            room -= len(chunk)
            if room < 0:
                break
            data = self._z.unconsumed_tail
            if self._z.eof:  # a gzip stream may hold several members, one after the other
                data, self._z = self._z.unused_data, zlib.decompressobj(zlib.MAX_WBITS | 32)
        return b"".join(out)
