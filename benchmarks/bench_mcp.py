"""MCP server start-up and tool latency (a script, not a test).

    .venv/bin/python benchmarks/bench_mcp.py [--index DIR] [--runs 5]

Each run spawns `python -m assistant mcp --no-ingest` over stdio with the SDK's client (its default,
filtered environment, as a desktop client starts it) and times: spawn → handshake answered; list_tools;
the first `search` (waits for the model and index, which load in the background after the handshake);
then 20 warm `search` and 5 warm `ask` calls (p50/p95). Writes results/mcp.json.
"""

from __future__ import annotations

import argparse
import sys
import time

from common import ROOT, machine, percentile, write_json

QUERIES = ["What is OmniMoE?", "fine-grained mixture-of-experts layer faster than PEER", "personality in large language models",
           "certified unlearning", "What does CABS stand for?"]


def one_run(index: str) -> dict:
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "assistant", "mcp", "--index", index, "--no-ingest"],
                                   cwd=str(ROOT))

    async def main() -> dict:
        t0 = time.monotonic()
        async with Client(params, read_timeout_seconds=600) as client:
            t_init = time.monotonic() - t0
            t = time.monotonic()
            await client.list_tools()
            t_list = time.monotonic() - t
            t = time.monotonic()
            await client.call_tool("search", {"query": QUERIES[0]})
            t_first = time.monotonic() - t
            search, ask = [], []
            for i in range(20):
                t = time.monotonic()
                await client.call_tool("search", {"query": QUERIES[i % len(QUERIES)]})
                search.append(time.monotonic() - t)
            for q in QUERIES:
                t = time.monotonic()
                await client.call_tool("ask", {"question": q})
                ask.append(time.monotonic() - t)
        return {"handshake_s": t_init, "list_tools_s": t_list, "first_search_s": t_first, "search_s": search, "ask_s": ask}

    return anyio.run(main)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default=str(ROOT / "data" / "index"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    info = machine()
    runs = [one_run(args.index) for _ in range(args.runs)]
    search = [x for r in runs for x in r["search_s"]]
    ask = [x for r in runs for x in r["ask_s"]]
    out = {
        "machine": info, "index": args.index, "runs": args.runs,
        "handshake_s": sorted(round(r["handshake_s"], 2) for r in runs),
        "list_tools_ms_p50": round(1000 * percentile([r["list_tools_s"] for r in runs], 50), 1),
        "first_search_s": sorted(round(r["first_search_s"], 2) for r in runs),
        "search_ms": {"p50": round(1000 * percentile(search, 50), 1), "p95": round(1000 * percentile(search, 95), 1)},
        "ask_ms": {"p50": round(1000 * percentile(ask, 50), 1), "p95": round(1000 * percentile(ask, 95), 1)},
    }
    print(write_json("mcp", out).read_text())


if __name__ == "__main__":
    main()
