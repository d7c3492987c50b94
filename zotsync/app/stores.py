"""The store a use case works on: the configured one, opened for the use case's needs (its create-and-
clean-up life is the store package's, `store.lifecycle`)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from ..config import Config
from ..store import Store, opened


def open_store(
    config: Config, must_exist: bool = False, readonly: bool = False
) -> AbstractContextManager[Store]:
    """The configured store. `readonly` (status, export, list): never creates, upgrades or writes it.
    Those and `must_exist` need a store some pull filled; a store this call creates for a pull that then
    fails is removed again, so a first pull refused by its source leaves no empty store behind."""
    return opened(config.store, must_exist=must_exist, readonly=readonly)
