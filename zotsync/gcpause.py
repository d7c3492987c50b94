"""Pausing Python's cyclic garbage collector around bulk work."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def bulk_phase() -> Iterator[None]:
    """Pause the cyclic collector while a run builds its library, page and files, or turns API pages into
    model objects: hundreds of thousands of long-lived objects without cycles, which the collector would
    scan again and again (about 30% of a run at 100k items, growing faster than the library). Memory is
    unchanged: reference counting still frees what is dropped; only reference cycles wait, and a run
    makes few. Nested use is harmless.

    On the way out the objects move straight to the oldest generation (freeze, then unfreeze): every
    object made while the collector slept still counts as new to it, so the first collection after the
    phase would scan them all at once (0.5 s at 100k items) while most are about to be freed by reference
    counting anyway. In the oldest generation they wait for the next full collection, which also finds the
    phase's cycles."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        gc.enable()
