"""load → chunk → embed → store, idempotent and resumable: a run over paper files (``run``), one batch of it
(``batch``), what a run refuses unless told (``guards``) and the removal of a file's papers (``removal``).

Imports: everything before it and :mod:`vectorstore.index`."""

from vectorstore import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "run": ("IngestReport", "content_hash", "ingest"),
    "removal": ("remove_sources",),
})
