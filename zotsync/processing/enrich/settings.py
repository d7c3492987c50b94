"""The `enrich` section of the config: enrichment's settings and the services it may ask, declared with
the config's `setting` fields (zotsync.config) and read by the same rules as the core's sections."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...config import MAX_DEADLINE, Reading, flag, number, setting
from ...config import read_text as _text
from ...secrets import register_url

NAME = "enrich"  # the processor's name: its section, its results in the store, its report

# The scholarly metadata services enrichment asks (zotsync/processing/enrich), in the default order, with
# the base URL of each one's API.
ENRICH_SERVICES: dict[str, str] = {
    "dblp": "https://dblp.org",
    "crossref": "https://api.crossref.org",
    "openalex": "https://api.openalex.org",
    "arxiv": "https://export.arxiv.org",
}
DEFAULT_ENRICH_DEADLINE = 120.0


def _services(reading: Reading, value: Any) -> tuple[str, ...]:
    if value is None:
        return tuple(ENRICH_SERVICES)
    known = ", ".join(ENRICH_SERVICES)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise reading.fail(f"must be a list of services: some of {known}")
    unknown = [v for v in value if v not in ENRICH_SERVICES]
    if unknown:
        raise reading.fail(f"names an unknown service '{unknown[0]}' (known: {known})")
    return tuple(dict.fromkeys(value))


def _endpoints(reading: Reading, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise reading.fail("must map service names to base URLs, e.g. {dblp: https://dblp.org}")
    endpoints = {}
    for name, url in value.items():
        if name not in ENRICH_SERVICES:
            raise reading.fail(f"names an unknown service '{name}' (known: {', '.join(ENRICH_SERVICES)})")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise reading.fail(f"must give {name} an http:// or https:// base URL")
        register_url(url)  # a password in it is masked like the API key
        endpoints[name] = url.rstrip("/")
    return endpoints


def _mailto(reading: Reading, value: Any) -> str:
    address = _text(reading, value).strip()
    if address and ("@" not in address or any(c.isspace() or not c.isprintable() for c in address)):
        raise reading.fail("must be an e-mail address (for Crossref's and OpenAlex's polite pools)")
    return address


@dataclass(frozen=True, slots=True)
class EnrichConfig:
    enabled: bool = flag(
        False, "sync fills in missing venues, years and DOIs from metadata services (titles leave here)"
    )
    services: tuple[str, ...] = setting(
        tuple(ENRICH_SERVICES),
        _services,
        "the services asked, in this order: dblp, crossref, openalex, arxiv",
        {"type": "array", "items": {"type": "string", "enum": list(ENRICH_SERVICES)}},
    )
    endpoints: dict[str, str] = setting(
        dict,
        _endpoints,
        "another base URL per service, e.g. {dblp: https://dblp.org}",
        {
            "type": "object",
            "propertyNames": {"enum": list(ENRICH_SERVICES)},
            "additionalProperties": {"type": "string"},
        },
        factory=True,
    )
    mailto: str = setting(
        "", _mailto, "an e-mail for Crossref's and OpenAlex's polite pools", {"type": "string"}
    )
    deadline: float = number(
        DEFAULT_ENRICH_DEADLINE,
        0,
        MAX_DEADLINE,
        "seconds enrichment may take in one run; what is left waits for the next run",
        f"must be a number of seconds above 0 and at most {MAX_DEADLINE:.0f}",
        above_low=True,
    )
    prefer_published: bool = flag(
        True, "a preprint whose published version a service knows shows the published venue"
    )
    citations: bool = flag(
        False,
        "sync also asks OpenAlex for each paper's citation count, references, retraction and open copy",
    )
    citations_max_age_days: float = number(
        30,
        0,
        3650,
        "days a citation count is kept before OpenAlex is asked again (references: until the item changes)",
        "must be a number of days from 0 to 3650",
    )

    def endpoint(self, service: str) -> str:
        return self.endpoints.get(service) or ENRICH_SERVICES[service]
