"""What the scholarly graph keeps of a work, as the page reads it (light: loaded with the config)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...model import WorkFacts

NAME = "citations"  # the processor's name: its results in the store, its report
WORK = "work:"  # the key of a cited work's record among its results (`work:W…`): not an item's


def work_facts(value: Mapping[str, Any]) -> WorkFacts | None:
    """A stored answer as the page reads it; None unless OpenAlex knew the work."""
    from ...model import WorkFacts

    if value.get("outcome") != "found":
        return None
    cited = value.get("cited_by")
    url = value.get("open_access_url")
    return WorkFacts(
        cited_by=str(cited) if isinstance(cited, int) and not isinstance(cited, bool) and cited >= 0 else "",
        retracted=value.get("retracted") is True,
        open_access_url=url if isinstance(url, str) and url.startswith(("https://", "http://")) else "",
    )
