"""The pure core: curated catalogue + Zotero library → page rows. No I/O here."""

from .match import Ambiguity, MatchResult, Unmatched, match
from .merge import UNFILED, Options, Reconciliation, reconcile

__all__ = [
    "UNFILED",
    "Ambiguity",
    "MatchResult",
    "Options",
    "Reconciliation",
    "Unmatched",
    "match",
    "reconcile",
]
