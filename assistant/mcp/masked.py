"""MCP errors leave the server with the configured secrets masked, on stdio and HTTP alike.

A key or password the user typed into a tool's argument (a venue filter, a paper id, a tool's name) came back
in the error naming it: "no indexed paper has venue …", "Unknown tool: …", pydantic's report of a bad argument
(a ninth hostile round). Every JSON-RPC error and every tool result marked ``isError`` is masked as it leaves
(:func:`assistant.faces.masked_reply`): on stdio as the SDK writes the message (:class:`MaskedWrites`), on HTTP
in the response body (:class:`assistant.faces.MaskedErrorBodies`: JSON, or server-sent events).
Tool results that are no error (answers, paper lists) pass as they are: a password that is a word would
otherwise be cut out of abstracts.
"""

from __future__ import annotations


class MaskedWrites:
    """The SDK's write stream (``SessionMessage`` objects) with each error reply masked
    (:func:`assistant.faces.masked_reply`);
    the rest of its interface is the inner stream's."""

    def __init__(self, inner):
        self._inner = inner

    async def send(self, item) -> None:
        from assistant.faces import masked_reply
        from assistant.text import configured_secrets

        message = item.message
        if configured_secrets() and type(message).__name__ in ("JSONRPCError", "JSONRPCResponse"):
            dumped = message.model_dump(by_alias=True, mode="json", exclude_unset=True)
            masked = masked_reply(dumped)
            if masked != dumped:
                item = type(item)(message=type(message).model_validate(masked), metadata=item.metadata)
        await self._inner.send(item)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    async def __aenter__(self):
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self._inner.__aexit__(*exc)
