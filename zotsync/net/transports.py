"""The HTTP client libraries zotsync uses, each behind `client.Transport`: httpx2 for the Zotero API (the
client pyzotero brings and configures) and requests for the scholarly metadata services. Each maps its
library's failures onto `Transient` and `RequestFailed`, and never lets their text (which may quote a
header, and so a key) into a message unmasked."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from ..secrets import excerpt, redact
from .policy import RequestFailed, Transient

if TYPE_CHECKING:
    import httpx2
    import requests

log = logging.getLogger("zotsync.net")

CHUNK = 64 * 1024


def describe(exc: BaseException) -> str:
    """An exception's first line, secrets masked (a transport error may quote what was sent)."""
    text = str(exc).strip()
    return redact(text.splitlines()[0] if text else type(exc).__name__)


def _invalid() -> RequestFailed:
    # The request itself could not be sent, e.g. a header value the library refuses. Its message quotes
    # the header, which may be a key: never show it.
    return RequestFailed("invalid", "the request could not be sent (an invalid request header)")


class _HttpxResponse:
    def __init__(self, response: httpx2.Response) -> None:
        self._response = response
        self.status = response.status_code
        self.reason = response.reason_phrase
        self.headers: Mapping[str, str] = response.headers

    def chunks(self) -> Iterator[bytes]:
        return self._response.iter_raw()


class HttpxTransport:
    def __init__(self, client: httpx2.Client) -> None:
        self.client = client

    @contextlib.contextmanager
    def open(
        self, url: str, params: Mapping[str, Any], headers: Mapping[str, str], timeout: float, connect: float
    ) -> Iterator[_HttpxResponse]:
        import httpx2

        try:
            with self.client.stream(
                "GET",
                url,
                params=dict(params),
                headers=dict(headers),
                timeout=httpx2.Timeout(timeout, connect=connect),
            ) as response:
                yield _HttpxResponse(response)
        except httpx2.ConnectTimeout:
            raise Transient("connecting timed out", unreachable=True) from None
        except httpx2.TimeoutException:
            raise Transient("the request timed out") from None
        except httpx2.ConnectError as exc:
            raise Transient(f"ConnectError: {describe(exc)}", unreachable=True) from None
        except httpx2.LocalProtocolError:
            raise _invalid() from None
        except httpx2.TransportError as exc:
            # Refused, reset or dropped connections and truncated bodies (RemoteProtocolError).
            raise Transient(f"connection failed ({type(exc).__name__}: {describe(exc)})") from None

    def close(self) -> None:
        self.client.close()


class _RequestsResponse:
    def __init__(self, response: requests.Response) -> None:
        self._response = response
        self.status = response.status_code
        self.reason = response.reason or ""
        self.headers: Mapping[str, str] = response.headers

    def chunks(self) -> Iterator[bytes]:
        return self._response.raw.stream(CHUNK, decode_content=False)


MAX_REDIRECTS = 5  # hops a request may take on its own host (a moved record); a loop ends there


class RequestsTransport:
    """Redirects are followed on the request's own host only, at most MAX_REDIRECTS of them: a service
    asked about a title never hands it on to a host the user did not configure, and a redirect loop costs
    a few requests, not requests' 30 on each retry."""

    def __init__(self, session: requests.Session) -> None:
        self.session = session

    @contextlib.contextmanager
    def open(
        self, url: str, params: Mapping[str, Any], headers: Mapping[str, str], timeout: float, connect: float
    ) -> Iterator[_RequestsResponse]:
        import requests
        import urllib3

        try:
            with self._following(url, params, headers, (connect, timeout)) as response:
                yield _RequestsResponse(response)
        except requests.ConnectTimeout:
            raise Transient("connecting timed out", unreachable=True) from None
        except (requests.Timeout, urllib3.exceptions.TimeoutError):
            raise Transient("the request timed out") from None
        except requests.exceptions.InvalidHeader:
            raise _invalid() from None
        except requests.ConnectionError as exc:
            cause = exc.args[0] if exc.args else None  # urllib3's MaxRetryError, whose reason says more
            cause = getattr(cause, "reason", cause)
            unreachable = isinstance(cause, urllib3.exceptions.NewConnectionError)
            raise Transient(f"ConnectError: {describe(exc)}", unreachable=unreachable) from None
        except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
            raise Transient(f"connection failed ({type(exc).__name__}: {describe(exc)})") from None

    def close(self) -> None:
        self.session.close()

    def _following(
        self, url: str, params: Mapping[str, Any], headers: Mapping[str, str], timeout: tuple[float, float]
    ) -> requests.Response:
        """The response at the end of the redirects `url` leads to on its own host."""
        response = self.session.get(
            url,
            params=dict(params),
            headers=dict(headers),
            timeout=timeout,
            stream=True,
            allow_redirects=False,
        )
        hops = 0
        while (target := self.session.get_redirect_target(response)) is not None:
            response.close()
            target = urljoin(response.url, target)
            if not same_host(response.url, target):
                host = excerpt(urlsplit(target).hostname or "?", 60)
                raise RequestFailed(
                    "redirect", f"redirected to another host ({host}), which zotsync does not follow"
                )
            if hops == MAX_REDIRECTS:
                raise RequestFailed("redirect", f"redirected more than {MAX_REDIRECTS} times")
            hops += 1
            response = self.session.get(
                target, headers=dict(headers), timeout=timeout, stream=True, allow_redirects=False
            )
        return response


def same_host(url: str, target: str) -> bool:
    """Whether a redirect from `url` to `target` stays on its host: the same host name and port, or the
    move from http up to https on the default ports; never from https down to http."""
    here, there = urlsplit(url), urlsplit(target)
    if not here.hostname or (here.hostname or "").lower() != (there.hostname or "").lower():
        return False
    try:
        ports = (here.port, there.port)
    except ValueError:  # a port that is no number
        return False
    if here.scheme == there.scheme:
        return there.scheme in ("http", "https") and ports[0] == ports[1]
    return (here.scheme, there.scheme) == ("http", "https") and ports == (None, None)
