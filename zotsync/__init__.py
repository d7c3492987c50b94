"""zotsync: keep a curated research reading list in sync with a Zotero library."""

__version__ = "0.2.0"
