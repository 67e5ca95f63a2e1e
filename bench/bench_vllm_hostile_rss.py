"""Peak memory of the ``vllm`` executor against the hostile-server suite, and of a sweep.

Three measurements, each in a fresh process, reported as peak RSS (the process's ``VmHWM``;
``/usr/bin/time -v`` for the sweep) and whether torch was imported:

1. ``client``: every case of ``tests/probe/test_vllm_hostile.py`` (24 hostile servers), the
   72-probe hung-server circuit-breaker case and the 1 GiB body, one after another through
   :class:`VllmExecutor`, in a process that imports nothing but the executor;
2. ``client+torch``: the same after ``import torch`` (what a process that already holds torch,
   e.g. one that also runs a ``local`` replica, pays);
3. ``sweep``: ``faultsense sweep`` of one ``vllm`` replica (4 GPUs, k=2) against a loopback
   server that answers every probe, whole: Dagster, the sweep job, the ledger commit and
   the analytics (``/usr/bin/time -v``).

Results: ``bench/results/vllm_hostile_rss.md``.

    nice -n 10 .venv/bin/python bench/bench_vllm_hostile_rss.py
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CLIENT = """
import sys
def hwm():  # peak RSS of this process, MB (VmHWM: ru_maxrss keeps a forking parent's size)
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]) // 1024
import time
sys.path.insert(0, {root!r})
if {with_torch!r}:
    import torch
import os
os.environ["FS_HOSTILE_KEY"] = "sk-hostile-7f3a9c1e5b2d4f60a8e1"
from faultsense_pipelines.probe.executors.vllm_http import VllmExecutor
from tests.hostile_server import HostileServer, hold
from tests.probe.test_vllm_hostile import CASES, DEADLINE, ENV
start = hwm()
errors = 0
for name, behaviour, expected in CASES:
    with HostileServer(behaviour) as server:
        ex = VllmExecutor(4, 2, url=server.url, api_key_env=ENV, hidden=64, n_experts=4, tokens=4, timeout_s=DEADLINE,
                          retries=0, max_body_bytes=1 << 20, max_line_bytes=256 << 10)
        result = ex.run([0, 1])
        ex.close()
    errors += (not result.ok) and expected in result.error
with HostileServer(lambda r, c: hold(c)) as server:
    ex = VllmExecutor(8, 4, url=server.url, api_key_env=ENV, hidden=64, n_experts=8, timeout_s=0.5, retries=2, backoff_s=0.01)
    results = [ex.run([i % 8, (i + 1) % 8, (i + 2) % 8, (i + 3) % 8]) for i in range(72)]
    ex.close()
def gib(request, conn):
    if request.path == "/v1/models":
        conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n")
        block = b"[" * (1 << 20)
        for _ in range(1024):
            conn.sendall(b"%x\\r\\n%s\\r\\n" % (len(block), block))
with HostileServer(gib) as server:
    ex = VllmExecutor(4, 2, url=server.url, hidden=64, n_experts=4, timeout_s=20, retries=0)
    huge = ex.run([0, 1])
peak = hwm()
print(f"{{len(CASES)}} {{errors}} {{sum(not r.ok for r in results)}} {{int('-byte cap' in huge.error)}} {{start}} {{peak}} {{int('torch' in sys.modules)}}")
"""

_SWEEP = """
import sys
sys.argv = ["faultsense", *sys.argv[1:]]
from faultsense_pipelines.console import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
print("torch imported:", "torch" in sys.modules, file=sys.stderr)
sys.exit(code)
"""


def client(with_torch: bool) -> str:
    """One table row: the hostile suite through the executor in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", _CLIENT.format(root=str(ROOT), with_torch=with_torch)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    cases, as_expected, breaker, huge, start, peak, torch = out.stdout.split()[-7:]
    return (
        f"| client{'+torch' if with_torch else ''} | {peak} | {start} | {'yes' if torch == '1' else 'no'} | "
        f"{as_expected}/{cases} hostile cases the expected error row, 72/72 hung-server probes errors ({breaker}), "
        f"1 GiB body capped ({'yes' if huge == '1' else 'no'}) |"
    )


def sweep() -> str:
    """One table row: a real ``faultsense sweep`` of a vLLM replica against a loopback server."""
    sys.path.insert(0, str(ROOT))
    from tests.hostile_server import HostileServer, models_card, send_json, send_stream, token_chunk

    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        ckpt = tmp / "ckpt"
        ckpt.mkdir()
        (ckpt / "config.json").write_text(json.dumps({"hidden_size": 64, "num_experts": 4, "num_experts_per_tok": 2}))

        def serve(request, conn):
            if request.path == "/v1/models":
                send_json(conn, 200, models_card(str(ckpt)))
            else:
                send_stream(conn, [token_chunk(-0.25)])

        with HostileServer(serve) as server:
            fleet = tmp / "fleet.yaml"
            fleet.write_text(
                f"ledger: {tmp / 'ledger'}\nreplicas:\n"
                f"  - {{name: vllm-a, gpus: 4, probe_size: 2, executor: vllm, vllm: {{url: '{server.url}', timeout_s: 2}}}}\n"
            )
            env = {**os.environ, "DAGSTER_HOME": str(tmp / "dagster")}
            env.pop("FAULTSENSE_LEDGER", None)
            (tmp / "dagster").mkdir()
            args = ["sweep", "--fleet", str(fleet), "--hour", "2026-11-30-08:00"]
            out = subprocess.run(
                ["/usr/bin/time", "-v", sys.executable, "-c", _SWEEP, *args], capture_output=True, text=True, env=env, timeout=900
            )
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1)) // 1024
    torch = "torch imported: True" in out.stderr
    return f"| sweep | {rss} | - | {'yes' if torch else 'no'} | exit {out.returncode}; one vllm replica, whole sweep job |"


def main() -> None:
    print("| process | peak RSS MB | RSS after imports MB | torch imported | what ran |")
    print("|---|---:|---:|---|---|")
    print(client(False), flush=True)
    print(client(True), flush=True)
    print(sweep(), flush=True)


if __name__ == "__main__":
    main()
