"""Which MCP-over-HTTP bodies are requests with an id JSON-RPC 2.0 does not allow (answered -32600, id null)."""

import pytest

from assistant.mcp.http_ids import bad_id_request


@pytest.mark.parametrize("body, bad", [
    (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', True),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', True),
    (b'{"jsonrpc":"2.0","id":[1],"method":"tools/list"}', True),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', True),
    (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', True),
    (b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":false,"method":"b"}]', True),
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}', False),
    (b'{"jsonrpc":"2.0","id":"x","method":"tools/list"}', False),
    (b'{"jsonrpc":"2.0","method":"notifications/initialized"}', False),  # a notification: 202 is right
    (b'{"jsonrpc":"2.0","id":null,"result":{}}', False),  # a reply, not a request
    (b'{not json', False),  # the SDK answers -32700 itself
    (b"[" * 100_000, False),  # nested too deeply to read: no RecursionError escapes
])
def test_bad_id_request(body, bad):
    assert bad_id_request(body) is bad
