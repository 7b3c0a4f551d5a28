"""Links that carry uploaded data: small uploads are kept on the server under their content hash.

A link (the URL of a view) names the data it was made on. Bundled datasets are named; an upload
is kept in one store shared by the sessions of this server, under the SHA-256 of its bytes, for
:data:`TTL_DAYS` days (or until the server restarts), so a link made while looking at it opens
the same data for whoever has the link. Only whoever has the link can name the upload: the key
is the hash of content they do not otherwise know. Uploads above :data:`MAX_BYTES` are not kept,
and a link to them (or to an upload the server no longer holds) says so on opening.

The store is the one piece of state shared between sessions on purpose (``st.cache_resource``);
everything per user stays in ``st.session_state``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass

import streamlit as st

TTL_DAYS = 7
MAX_BYTES = 2_000_000
MAX_ENTRIES = 256


@dataclass
class Kept:
    name: str
    content: bytes
    stored: float  # time.time() when kept


class UploadStore:
    """Uploads by content hash, with an expiry and a bound on their number."""

    def __init__(self, ttl_s: float = TTL_DAYS * 86400, max_entries: int = MAX_ENTRIES):
        self.ttl_s, self.max_entries = ttl_s, max_entries
        self._items: dict[str, Kept] = {}
        self._lock = threading.Lock()

    def keep(self, name: str, content: bytes) -> str | None:
        """Keep ``content``; its key, or None when it is too large to keep."""
        if len(content) > MAX_BYTES:
            return None
        key = hashlib.sha256(content).hexdigest()[:24]
        with self._lock:
            self._expire()
            self._items[key] = Kept(name, content, time.time())
            while len(self._items) > self.max_entries:
                self._items.pop(next(iter(self._items)))
        return key

    def get(self, key: str) -> Kept | None:
        with self._lock:
            self._expire()
            return self._items.get(str(key))

    def _expire(self) -> None:
        now = time.time()
        for k in [k for k, v in self._items.items() if now - v.stored > self.ttl_s]:
            del self._items[k]


@st.cache_resource(show_spinner=False)
def store() -> UploadStore:
    """The server's upload store (one per server process)."""
    return UploadStore()
