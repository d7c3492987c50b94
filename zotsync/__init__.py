"""zotsync: keep a curated research reading list in sync with a Zotero library."""

__version__ = "0.1.0"
