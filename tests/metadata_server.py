"""A real HTTP server on 127.0.0.1 playing the scholarly metadata services, for tests and bench/.

One server answers for DBLP, Crossref, OpenAlex and arXiv, each under its own prefix (`/dblp`,
`/crossref`, …: `server.endpoints()` is what `enrich.endpoints` takes), at the real APIs' paths. It
answers from the papers it knows (`Paper`), in each service's own format (the shapes of the real
responses in ../shared/fixtures/metadata-apis/), or replays a recorded body; faults are injected per
service for the next requests (`Fault`), and every request is recorded.

    with MetadataServer([Paper("Ansor: …", ("Lianmin Zheng",), "2020", "OSDI", dblp="conf/osdi/…")]) as s:
        s.endpoints()                   # {"dblp": "http://127.0.0.1:PORT/dblp", …}
        s.replay("dblp", body)          # every DBLP request answers this recorded body
        s.inject("crossref", Fault.status_code(429, retry_after=2), Fault.html())
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape

from served import Served

SERVICES = ("dblp", "crossref", "openalex", "arxiv")


@dataclass(frozen=True)
class Paper:
    """A paper the fake services know. `dblp` is its DBLP key (`conf/osdi/ZhengJSWYHMYZSGY20`), which
    names the venue's stream; `kind` is proceedings, journal or preprint."""

    title: str
    authors: tuple[str, ...]  # "Given Family"
    year: str
    venue: str = ""  # DBLP's short venue ("OSDI"), or a journal's name
    proceedings: str = ""  # the proceedings title Crossref and OpenAlex give
    dblp: str = ""
    doi: str = ""
    arxiv: str = ""
    kind: str = "proceedings"
    journal_ref: str = ""  # arXiv's note of where it appeared
    known_by: tuple[str, ...] = SERVICES
    # OpenAlex's graph of it (the scholarly graph's fields, as the real responses give them)
    openalex: str = ""  # its work id, W…; made from the title when empty
    cited_by: int = 0
    references: tuple[str, ...] = ()  # the ids of the works it cites
    retracted: bool = False
    oa_url: str = ""  # its best open-access location's PDF

    @property
    def work_id(self) -> str:
        return self.openalex or f"W{abs(hash(self.title)) % 10**10}"

    @property
    def family(self) -> str:
        return self.authors[0].split()[-1] if self.authors else ""


@dataclass(frozen=True)
class Fault:
    """What goes wrong with one request to a service."""

    kind: str  # status | html | hang | drop
    status: int = 503
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    content_type: str = "text/plain"
    seconds: float = 0.0

    @classmethod
    def status_code(cls, status: int, retry_after: float | None = None, body: bytes = b"") -> Fault:
        headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
        return cls("status", status=status, headers=headers, body=body or b"Too Many Requests")

    @classmethod
    def html(cls) -> Fault:
        """200 with an HTML page, as DBLP's bot check answers."""
        page = (
            b"<!DOCTYPE html><html><head><title>dblp: please wait</title></head><body>Checking</body></html>"
        )
        return cls("status", status=200, body=page, content_type="text/html; charset=utf-8")

    @classmethod
    def hang(cls, seconds: float) -> Fault:
        """Answer nothing for `seconds` (longer than the client's timeout), then hang up."""
        return cls("hang", seconds=seconds)

    @classmethod
    def drop(cls) -> Fault:
        return cls("drop")


@dataclass(frozen=True)
class Recorded:
    service: str
    path: str  # below the service's prefix
    params: dict[str, str]
    headers: dict[str, str]
    at: float  # the server's clock on arrival


@dataclass
class _Answer:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


class _RealTime:
    monotonic = staticmethod(time.monotonic)


class MetadataServer(Served):
    """`clock` stamps the requests (a test's fake clock shows the pauses zotsync took between them); the
    rate limit always reads real time, as a real service does."""

    clock: Any = _RealTime()

    def __init__(self, papers: Iterable[Paper] = (), latency: float = 0.0, rate: float | None = None) -> None:
        self.papers: list[Paper] = []
        self._index: dict[str, set[int]] = defaultdict(set)
        self.add(*papers)
        self.latency = latency  # seconds before each answer: a network round trip (bench/)
        self.rate = rate  # requests a second each service allows; faster ones get 429 with Retry-After
        self.requests: list[Recorded] = []
        self.too_fast = 0  # requests refused by the rate limit
        self._replays: dict[str, _Answer] = {}
        self._faults: dict[str, deque[Fault]] = defaultdict(deque)
        self._window: dict[str, deque[float]] = defaultdict(deque)  # arrivals in the last second
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True

    # -- set-up ---------------------------------------------------------------------------------------
    def add(self, *papers: Paper) -> None:
        for paper in papers:
            self.papers.append(paper)
            for word in set(_words(paper.title)):
                self._index[word].add(len(self.papers) - 1)

    def replay(
        self, service: str, body: bytes, status: int = 200, content_type: str = "", **headers: str
    ) -> None:
        """Every request to `service` answers this recorded body (until `forget`)."""
        kind = content_type or (
            "application/atom+xml" if body.lstrip()[:5] == b"<?xml" else "application/json"
        )
        self._replays[service] = _Answer(status, body, kind, dict(headers))

    def forget(self, service: str) -> None:
        self._replays.pop(service, None)

    def inject(self, service: str, *faults: Fault) -> None:
        with self._lock:
            self._faults[service].extend(faults)

    def heal(self, service: str) -> None:
        """Drop the faults still waiting for `service`: it answers again."""
        with self._lock:
            self._faults[service].clear()

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.too_fast = 0

    # -- where it is --------------------------------------------------------------------------------
    def endpoints(self) -> dict[str, str]:
        return {service: f"{self.url}/{service}" for service in SERVICES}

    def asked(self, service: str) -> list[Recorded]:
        return [r for r in self.requests if r.service == service]

    # -- answering ------------------------------------------------------------------------------------
    def _arrive(
        self, service: str, path: str, params: dict[str, str], headers: dict[str, str]
    ) -> Fault | None:
        with self._lock:
            now = time.monotonic()
            self.requests.append(Recorded(service, path, params, headers, self.clock.monotonic()))
            faults = self._faults[service]
            fault = faults.popleft() if faults else None
            if fault is None and self.rate:
                # At most `rate` requests in any second, as a real service counts them.
                window = self._window[service]
                while window and now - window[0] >= 1.0:
                    window.popleft()
                if len(window) >= self.rate:
                    self.too_fast += 1
                    return Fault.status_code(429, retry_after=round(1.0 - (now - window[0]), 3))
                window.append(now)
            return fault

    def answer(self, service: str, path: str, params: Mapping[str, str]) -> _Answer:
        replay = self._replays.get(service)
        if replay is not None:
            return replay
        if service == "dblp" and path == "/search/publ/api":
            return _json(_dblp(self._search(params.get("q", ""), service, every_word=True)))
        if service == "crossref" and path == "/works":
            found = self._search(params.get("query.bibliographic", ""), service)
            return _json(
                {
                    "status": "ok",
                    "message-type": "work-list",
                    "message": {"total-results": len(found), "items": [_crossref(p) for p in found]},
                }
            )
        if service == "crossref" and path.startswith("/works/"):
            paper = self._by_doi(unquote(path[len("/works/") :]), service)
            if paper is None:
                return _Answer(404, b"Resource not found.", "text/plain")
            return _json({"status": "ok", "message-type": "work", "message": _crossref(paper)})
        if service == "openalex" and path == "/works" and "filter" in params:
            return _json(self._filter(params["filter"], params.get("select", "")))
        if service == "openalex" and path == "/works":
            found = self._search(params.get("search", ""), service)
            return _json({"meta": {"count": len(found)}, "results": [_openalex(p) for p in found]})
        if service == "openalex" and path.startswith("/works/doi:"):
            paper = self._by_doi(unquote(path[len("/works/doi:") :]), service)
            if paper is None:
                return _Answer(404, b"<!doctype html>\n<title>404 Not Found</title>\n", "text/html")
            return _json(_openalex(paper))
        if service == "arxiv" and path == "/api/query":
            wanted = params.get("id_list", "")
            found = [p for p in self.papers if p.arxiv and p.arxiv == wanted and service in p.known_by]
            return _Answer(200, _arxiv(found), "application/atom+xml")
        return _Answer(404, b"not a path this fake serves", "text/plain")

    def _search(self, text: str, service: str, every_word: bool = False) -> list[Paper]:
        """The known papers sharing the query's words, most shared first (DBLP: every word)."""
        words = [w for w in dict.fromkeys(_words(text)) if w in self._index or every_word]
        if not words:
            return []
        postings = sorted((self._index.get(w, set()) for w in words), key=len)
        if every_word:
            ids = set.intersection(*postings) if postings else set()
        else:
            ids = set().union(*postings[:3])  # the rarest words name the paper
        scored = sorted(ids, key=lambda i: (-sum(i in p for p in postings), i))
        return [self.papers[i] for i in scored if service in self.papers[i].known_by][:5]

    def _filter(self, text: str, select: str) -> dict[str, Any]:
        """OpenAlex's `filter=doi:a|b|…` or `filter=openalex:W1|W2|…` (its batch questions): the works
        among the known papers, in OpenAlex's order (not the question's), with only the fields selected."""
        by, _, values = text.partition(":")
        wanted = {_doi_key(v) if by == "doi" else v.upper() for v in values.split("|")}
        if len(wanted) > 100:
            return {"error": "Invalid query parameters error.", "message": "max 100 values"}
        found = [
            p
            for p in self.papers
            if "openalex" in p.known_by
            and ((_doi_key(p.doi) if p.doi else None) if by == "doi" else p.work_id) in wanted
        ]
        fields = [f for f in select.split(",") if f]
        works = [
            {k: v for k, v in _openalex(p).items() if not fields or k in fields}
            for p in sorted(found, key=lambda p: p.work_id)
        ]
        meta = {"count": len(works), "db_response_time_ms": 12, "page": 1, "per_page": len(works)}
        return {"meta": meta, "results": works, "group_by": []}

    def _by_doi(self, doi: str, service: str) -> Paper | None:
        return next(
            (
                p
                for p in self.papers
                if p.doi and p.doi.casefold() == doi.casefold() and service in p.known_by
            ),
            None,
        )


def _doi_key(doi: str) -> str:
    """A DOI as OpenAlex matches it: without its resolver prefix, in lower case."""
    return re.sub(r"^(https?://(dx\.)?doi\.org/|doi:)", "", doi.strip(), flags=re.I).casefold()


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def _json(value: Any) -> _Answer:
    return _Answer(200, json.dumps(value, ensure_ascii=False).encode())


def _dblp(papers: list[Paper]) -> dict[str, Any]:
    hits = {
        "@total": str(len(papers)),
        "@computed": str(len(papers)),
        "@sent": str(len(papers)),
        "@first": "0",
    }
    if papers:  # DBLP sends no "hit" at all when nothing matched
        hits["hit"] = [  # type: ignore[assignment]
            {
                "@score": str(9 - n),
                "@id": str(1000 + n),
                "info": {
                    "authors": {"author": [{"@pid": f"0/{n}", "text": a} for a in p.authors]},
                    "title": p.title + ".",
                    "venue": "CoRR" if p.kind == "preprint" else p.venue,
                    "year": p.year,
                    "type": {
                        "preprint": "Informal and Other Publications",
                        "journal": "Journal Articles",
                    }.get(p.kind, "Conference and Workshop Papers"),
                    "key": p.dblp,
                    **({"doi": p.doi, "ee": f"https://doi.org/{p.doi}"} if p.doi else {}),
                    "url": f"https://dblp.org/rec/{p.dblp}",
                },
                "url": f"URL#{1000 + n}",
            }
            for n, p in enumerate(papers)
        ]
    return {"result": {"query": "", "status": {"@code": "200", "text": "OK"}, "hits": hits}}


def _crossref(p: Paper) -> dict[str, Any]:
    given_family = [name.rsplit(" ", 1) for name in p.authors]
    return {
        "DOI": p.doi,
        "type": {"preprint": "posted-content", "journal": "journal-article"}.get(
            p.kind, "proceedings-article"
        ),
        "title": [p.title],
        "author": [
            {
                "given": parts[0] if len(parts) > 1 else "",
                "family": parts[-1],
                "sequence": "first" if n == 0 else "additional",
            }
            for n, parts in enumerate(given_family)
        ],
        "container-title": [p.proceedings or p.venue] if p.kind != "preprint" else [],
        **({"institution": [{"name": "arXiv"}]} if p.kind == "preprint" else {}),
        "published": {"date-parts": [[int(p.year)]]},
    }


def _openalex(p: Paper) -> dict[str, Any]:
    return {
        "id": f"https://openalex.org/{p.work_id}",
        "doi": f"https://doi.org/{p.doi.casefold()}" if p.doi else None,  # OpenAlex's DOIs are lower case
        "title": p.title,
        "display_name": p.title,
        "publication_year": int(p.year),
        "type": "preprint" if p.kind == "preprint" else "article",
        "primary_location": {
            "source": {
                "display_name": "arXiv (Cornell University)"
                if p.kind == "preprint"
                else (p.proceedings or p.venue),
                "type": {"preprint": "repository", "journal": "journal"}.get(p.kind, "conference"),
            }
        },
        "authorships": [{"author": {"display_name": a}} for a in p.authors],
        "cited_by_count": p.cited_by,
        "counts_by_year": [{"year": int(p.year), "cited_by_count": p.cited_by}] if p.cited_by else [],
        "is_retracted": p.retracted,
        "open_access": {
            "is_oa": bool(p.oa_url),
            "oa_status": "green" if p.oa_url else "closed",
            "oa_url": p.oa_url or None,
            "any_repository_has_fulltext": bool(p.oa_url),
        },
        "best_oa_location": (
            {
                "is_oa": True,
                "landing_page_url": p.oa_url,
                "pdf_url": p.oa_url,
                "source": None,
                "license": None,
                "version": "acceptedVersion",
            }
            if p.oa_url
            else None
        ),
        "referenced_works_count": len(p.references),
        "referenced_works": [f"https://openalex.org/{w}" for w in p.references],
    }


def _arxiv(papers: list[Paper]) -> bytes:
    entries = "".join(
        f"""  <entry>
    <id>http://arxiv.org/abs/{p.arxiv}v1</id>
    <title>{escape(p.title)}</title>
    <published>{p.year}-06-11T17:00:00Z</published>
"""
        + (f"    <arxiv:journal_ref>{escape(p.journal_ref)}</arxiv:journal_ref>\n" if p.journal_ref else "")
        + (f"    <arxiv:doi>{escape(p.doi)}</arxiv:doi>\n" if p.doi and p.journal_ref else "")
        + "".join(f"    <author>\n      <name>{escape(a)}</name>\n    </author>\n" for a in p.authors)
        + "  </entry>\n"
        for p in papers
    )
    return (
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        '<feed xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
        'xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns="http://www.w3.org/2005/Atom">\n'
        f"  <opensearch:totalResults>{len(papers)}</opensearch:totalResults>\n{entries}</feed>\n"
    ).encode()


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up mid-answer is part of the tests


def _handler_for(server: MetadataServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            service, _, rest = parts.path.lstrip("/").partition("/")
            params = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
            fault = server._arrive(service, "/" + rest, params, dict(self.headers.items()))
            if fault is not None and fault.kind == "drop":
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault is not None and fault.kind == "hang":
                time.sleep(fault.seconds)
                self.close_connection = True
                return
            if server.latency:
                time.sleep(server.latency)
            if fault is not None:
                answer = _Answer(fault.status, fault.body, fault.content_type, dict(fault.headers))
            else:
                answer = server.answer(service, "/" + rest, params)
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)
                self.wfile.flush()
            except OSError:
                self.close_connection = True

    return Handler
