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


# -- a page's own settings in the link ------------------------------------------------------------
# The URL always carries the data and the model (ui.state.sync_query_params); a page with settings
# of its own (the Plan page's deadline, price, ...) registers them during its run with
# :func:`set_page_params`, and the URL written at the end of that run carries them too. They are
# taken once per run, so a link made on another page does not keep them.
def set_page_params(params: dict) -> None:
    """This run's page settings for the link: {query key: value}; empty values are left out."""
    st.session_state["link:page"] = {str(k): str(v) for k, v in params.items() if v not in (None, "")}


def take_page_params() -> dict:
    """The settings the page of this run registered (then forgotten)."""
    return dict(st.session_state.pop("link:page", None) or {})


def linked_page_params(keys) -> dict:
    """The values the opening link gives for ``keys``, once per session and page (the later runs keep
    the widgets' own values): {key: text} of those present."""
    ss = st.session_state
    marker = "link:read:" + ",".join(keys)
    if ss.get(marker):
        return {}
    ss[marker] = True
    qp = st.query_params
    return {k: qp.get(k) for k in keys if qp.get(k) not in (None, "")}
