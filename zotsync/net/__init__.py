"""HTTP the way every zotsync service asks for it, whatever the client library: `RequestPolicy` (pacing,
retries, Backoff/Retry-After, the deadline, on an injectable clock), `HttpClient` (one GET, its body
capped), the transports (httpx2 for the Zotero API, requests for the metadata services) and `run_ahead`
(a few requests at a time on threads)."""

from .client import HttpClient, Reply, Transport
from .parallel import progress, run_ahead
from .policy import REAL_CLOCK, Clock, GivenUp, Limits, RealClock, RequestFailed, RequestPolicy, Transient

__all__ = [
    "REAL_CLOCK",
    "Clock",
    "GivenUp",
    "HttpClient",
    "Limits",
    "RealClock",
    "Reply",
    "RequestFailed",
    "RequestPolicy",
    "Transient",
    "Transport",
    "progress",
    "run_ahead",
]
