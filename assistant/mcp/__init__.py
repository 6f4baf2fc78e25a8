"""The MCP server (``server``) and its tools, one plain function per tool over the library (``tools``).

Imports: ``faces`` and what is before it."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "server": ("serve",),
})
