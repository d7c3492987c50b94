"""What processors derive from the library (zotsync/processing), kept per processor and item."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Derived:
    """One processor's result for one item."""

    key: str  # the item's key
    inputs: str  # a digest of what the result was made from: the processor's to choose and compare
    value: Any  # JSON-shaped: what was found (None when nothing was)
    made_at: str  # when, UTC ISO 8601 (for results worth asking about again after a while)

    def row(self, processor: str) -> tuple[str, str, str, str, str]:
        return (
            processor,
            self.key,
            self.inputs,
            json.dumps(self.value, ensure_ascii=False, sort_keys=True),
            self.made_at,
        )

    @classmethod
    def of_row(cls, key: str, inputs: str, value: str, made_at: str) -> Derived:
        return cls(key, inputs, json.loads(value), made_at)
