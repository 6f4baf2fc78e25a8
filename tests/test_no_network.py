"""Nothing leaves the machine, checked at the socket level (issue 17).

`ingest`, `ask`, `related` and `serve` (with one question asked through the page in headless
Chromium) each run under ``strace -f -e trace=connect,sendto,sendmsg,sendmmsg`` (Debian's strace,
installed by `make test` like Chromium), once with the Makefile's variables and once with none of
them. Any connect or send to an address outside loopback, and any DNS query (port 53, to any
address), fails the test naming the command, the process and the address. Unlike the Python audit
hook of test_hardening.py, this sees lookups made below Python (onnxruntime's C++ telemetry did
one about 10 s after its first session).

Each command is held open for LINGER seconds after it finishes (the page: after it answered), so a
background sender that waits a while, as that telemetry does, is caught even in a short command. The
eight traced processes run at the same time to keep the test short.
"""

from __future__ import annotations

import ipaddress
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import CORPUS, ROOT, free_port
from tests.test_hardening import wait_http

STRACE = shutil.which("strace") or "/usr/bin/strace"
SYSCALLS = "connect,sendto,sendmsg,sendmmsg"
LINGER = 13.0
"""Seconds each traced process stays alive after its work: onnxruntime's telemetry (when it is on)
first looks its host up about 11 s after the first session is created."""
SYPE = "000_12a0d7b1c5c902c5#15"

# Runs the CLI exactly as the console script does, then stays alive LINGER seconds; writes its pid
# so that `serve` can be stopped by pid (not through strace).
BOOT = r"""
import os, sys, time
with open(os.environ["PA_PIDFILE"], "w") as f:
    f.write(str(os.getpid()))
sys.argv = ["paper-assistant"] + sys.argv[1:]
try:
    from assistant.cli import main
    main()
finally:
    time.sleep(float(os.environ["PA_LINGER"]))
"""


def makefile_variables() -> dict[str, str]:
    """The variables the Makefile exports to every command (``export NAME := VALUE``)."""
    text = (ROOT / "Makefile").read_text()
    return dict(re.findall(r"^export\s+(\w+)\s*:?=\s*(\S*)\s*$", text, re.M))


def base_env(with_makefile: bool) -> dict[str, str]:
    """The test's environment without anything that would switch a library off for it: the Makefile's
    variables (unless ``with_makefile``), the project's own settings, and CI / ORT_* (onnxruntime
    also stays quiet under CI=true, which would hide its telemetry in CI alone)."""
    made = makefile_variables()
    drop = set(made) | {"CI", "NO_PROXY", "no_proxy", "DO_NOT_TRACK", "HF_HUB_DISABLE_TELEMETRY"}
    env = {k: v for k, v in os.environ.items()
           if k not in drop and not k.startswith(("PAPER_ASSISTANT_", "ORT_", "LANGCHAIN_", "LANGSMITH_",
                                                  "CHROMA_", "OPENAI_"))}
    if with_makefile:
        env.update(made)
    env["PYTHONPATH"] = str(ROOT)  # this checkout's code, whatever the venv was installed from
    return env


@dataclass
class Traced:
    """One command under strace: its name, its strace log and the process."""

    name: str
    log: Path
    pidfile: Path
    proc: subprocess.Popen
    out: Path
    extra: dict = field(default_factory=dict)

    def output(self) -> str:
        return self.out.read_text(errors="replace")


def start(name: str, args: list[str], env: dict[str, str], work: Path) -> Traced:
    log, pidfile, out = work / f"{name}.strace", work / f"{name}.pid", work / f"{name}.out"
    env = dict(env, PA_PIDFILE=str(pidfile), PA_LINGER=str(LINGER))
    cmd = [STRACE, "-f", "-qq", "--seccomp-bpf", "-yy", "-Y", "-e", f"trace={SYSCALLS}", "-o", str(log),
           sys.executable, "-c", BOOT, *args]
    with open(out, "w") as f:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return Traced(name, log, pidfile, proc, out)


ADDRESS = re.compile(
    r'sin_port=htons\((?P<port>\d+)\), sin_addr=inet_addr\("(?P<v4>[^"]+)"\)'
    r'|sin6_port=htons\((?P<port6>\d+)\).*?inet_pton\(AF_INET6, "(?P<v6>[^"]+)"'
    r'|<(?:TCP|UDP|TCPv6|UDPv6):\[[^\]]*?->\[?(?P<peer>[0-9a-fA-F.:]+?)\]?:(?P<peerport>\d+)\]>')


def is_local(host: str) -> bool:
    addr = ipaddress.ip_address(host)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped:
        addr = addr.ipv4_mapped
    return addr.is_loopback


def offences(log: Path) -> list[tuple[str, str, str]]:
    """Each traced call that reaches outside loopback or asks a DNS server: (``pid<comm>``, ``host:port``, call)."""
    bad = []
    for line in log.read_text(errors="replace").splitlines():
        if not re.search(rf"\b(?:{SYSCALLS.replace(',', '|')})\(", line):
            continue
        for m in ADDRESS.finditer(line):
            host = m.group("v4") or m.group("v6") or m.group("peer")
            port = int(m.group("port") or m.group("port6") or m.group("peerport"))
            if port == 53 or not is_local(host):
                pid, call = line.split(" ", 1)
                bad.append((pid, f"{host}:{port}", call[:200]))
    return bad


def ask_through_page(browser, url: str) -> str:
    from tests.test_browser import ask, last_bot, open_page

    page = open_page(browser, url)
    ask(page, "What is SyPE?")
    page.locator("#pa-sources details.pa-source").first.wait_for(state="attached")
    text = last_bot(page).inner_text() + "\n" + page.locator("#pa-sources").inner_text()
    page.close()
    return text


def stop(t: Traced) -> None:
    """SIGTERM the traced program itself (its pid from the pid file), then wait for strace to end."""
    if t.proc.poll() is None and t.pidfile.exists():
        try:
            os.kill(int(t.pidfile.read_text()), signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        t.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        t.proc.kill()
        t.proc.wait()


@pytest.mark.browser
def test_no_command_reaches_outside_loopback_or_asks_dns(index, index_dir, tmp_path):
    if not Path(STRACE).exists():
        pytest.fail(f"{STRACE} is missing: run `make strace` (apt-get install strace)")
    from tests.test_browser import ARGS, CHROMIUM

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make browser` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    small = CORPUS / "004_9268713af81d21d3.txt"  # 19 papers: a real ingest that embeds
    draft = "We corrupt the answers of language models and test whether LLM judges notice."
    runs: list[Traced] = []
    serves: dict[str, tuple[Traced, str]] = {}
    t0, cpu0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        for variant in ("makefile", "bare"):
            env = base_env(with_makefile=variant == "makefile")
            work = tmp_path / variant
            work.mkdir()
            for name in ("ask", "related", "serve"):
                shutil.copytree(index_dir, work / f"index-{name}")
            port = free_port()
            commands = {
                "ingest": ["ingest", str(small), "--index", str(work / "index-ingest")],
                "ask": ["ask", "What is SyPE?", "--index", str(work / "index-ask")],
                "related": ["related", draft, "--index", str(work / "index-related")],
                "serve": ["serve", "--index", str(work / "index-serve"), "--port", str(port)],
            }
            for name, args in commands.items():
                runs.append(start(f"{variant}-{name}", args, env, work))
            serves[variant] = (runs[-1], f"http://127.0.0.1:{port}/")
        # One question through the page of each `serve`, then each stays up LINGER seconds.
        answers = {}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            try:
                for variant, (t, url) in serves.items():
                    wait_http(url, t.proc)
                    answers[variant] = ask_through_page(browser, url)
            finally:
                browser.close()
        answered = time.monotonic()
        for t in runs:
            if t.name.endswith("serve"):
                continue
            t.proc.wait(timeout=240)
        time.sleep(max(0.0, LINGER - (time.monotonic() - answered)))
    finally:
        for t in runs:
            stop(t)
    elapsed = time.monotonic() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
    for variant, text in answers.items():
        assert SYPE in text, f"{variant} serve: the page did not answer with SyPE's abstract:\n{text[:500]}"
    report: dict[tuple[str, str], list] = {}  # (command, address) → [(process, call)]
    for t in runs:
        out = t.output()
        if not t.name.endswith("serve"):
            assert t.proc.returncode == 0, f"{t.name} exited with {t.proc.returncode}:\n{out[-2000:]}"
        assert "Traceback" not in out, f"{t.name}:\n{out[-2000:]}"
        for pid, where, call in offences(t.log):
            report.setdefault((t.name, where), []).append((pid, call))
    # strace did see the sockets: serve's own loopback connection to its page is in its log.
    for variant, (t, url) in serves.items():
        port = url.rstrip("/").rsplit(":", 1)[1]
        assert f"htons({port})" in t.log.read_text(), f"{variant} serve: strace saw none of the page's own traffic"
    outs = {t.name: t.output() for t in runs}
    assert "19 added" in outs["makefile-ingest"] and "19 added" in outs["bare-ingest"], outs["bare-ingest"][-500:]
    assert SYPE in outs["bare-ask"] and SYPE in outs["makefile-ask"], outs["bare-ask"][-500:]
    assert not report, "network use outside loopback or DNS (command → address: calls; processes; first call):\n" + "\n".join(
        f"{name} → {where}: {len(calls)} calls; processes {' '.join(sorted({p for p, _ in calls}))}; {calls[0][1]}"
        for (name, where), calls in sorted(report.items()))
    print(f"8 traced runs in {elapsed:.0f} s, {cpu:.0f} CPU-seconds (each then idles {LINGER:.0f} s)")


@pytest.mark.parametrize("entry", ["import assistant.cli", "import vectorstore.papers.records"])
def test_every_entry_point_switches_telemetry_off_whatever_the_environment_says(entry):
    """The switches are set by importing either package, before any library reads them: a shell that
    switched a library's telemetry or tracing on does not switch it on here. The hubs' offline mode is
    only a default."""
    import json

    # Written out here, not read from vectorstore.offline: dropping a switch there must fail this test.
    shell = {"ORT_DISABLE_TELEMETRY": "0", "GRADIO_ANALYTICS_ENABLED": "True", "ANONYMIZED_TELEMETRY": "True",
             "HF_HUB_DISABLE_TELEMETRY": "0", "LANGSMITH_TRACING_V2": "true", "LANGCHAIN_TRACING_V2": "true",
             "CHROMA_OTEL_COLLECTION_ENDPOINT": "http://127.0.0.1:4317", "HF_HUB_OFFLINE": "0"}
    expected = {"ORT_DISABLE_TELEMETRY": "1", "GRADIO_ANALYTICS_ENABLED": "False", "ANONYMIZED_TELEMETRY": "False",
                "HF_HUB_DISABLE_TELEMETRY": "1", "LANGSMITH_TRACING_V2": "false", "LANGCHAIN_TRACING_V2": "false",
                "CHROMA_OTEL_COLLECTION_ENDPOINT": "",
                "HF_HUB_OFFLINE": "0",  # a default only: a user may allow a download deliberately
                "TRANSFORMERS_OFFLINE": "1"}  # unset in the shell: the default
    code = f"{entry}\nimport json, os\nprint(json.dumps({{k: os.environ.get(k) for k in {sorted(expected)!r}}}))"
    env = {k: v for k, v in base_env(with_makefile=False).items() if k != "TRANSFORMERS_OFFLINE"} | shell
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == expected
