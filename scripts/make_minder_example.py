"""Write the Minder example the ``minder_faults`` asset scans by default: a model trained on
healthy history, and metrics to scan. It ships in the package (``faultsense_pipelines/data/minder/``),
so a plain ``pip install .`` finds it.

    .venv/bin/python scripts/make_minder_example.py            # rewrites faultsense_pipelines/data/minder/
    .venv/bin/python scripts/make_minder_example.py /tmp/out   # writes elsewhere instead

``history`` (not kept): 16 machines x 12 metrics x 30 min at 10 s, healthy. ``metrics.parquet``:
the same fleet for 20 min in which node-0005's GPU is throttled from 00:07:00, with a 30-s
blip on node-0011 and a job-wide slowdown from 00:12:00 (neither is a machine fault).
``model/``: ``minder.safetensors`` + ``minder.json``. Every file is made readable by all (0644):
the weights file is otherwise written owner-only, and an installed copy would then be unreadable
to other users.
"""

import sys
from pathlib import Path

from faultsense_pipelines.minder import MinderSettings, save_model, train_minder
from faultsense_pipelines.minder.synth import Injection, generate_fleet

PACKAGED = Path(__file__).resolve().parents[1] / "faultsense_pipelines" / "data" / "minder"


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    history = generate_fleet(16, 1800, seed=21)
    save_model(train_minder(history.array, MinderSettings(train_steps=100)), out / "model")
    scanned = generate_fleet(16, 1200, seed=22, injections=[
        Injection("gpu_throttle", "node-0005", 420.0),
        Injection("blip", "node-0011", 300.0, 30.0),
        Injection("job_slowdown", None, 720.0),
    ])  # fmt: skip
    scanned.to_frame(nan_rate=0.005).to_parquet(out / "metrics.parquet", index=False)
    for path in (out / "metrics.parquet", *(out / "model").iterdir()):
        path.chmod(0o644)
    print(f"wrote {out / 'metrics.parquet'} and {out / 'model'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else PACKAGED)
