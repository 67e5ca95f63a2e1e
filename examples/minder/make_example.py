"""Write the Minder example: a model trained on healthy history, and metrics to scan.

    .venv/bin/python examples/minder/make_example.py

``history`` (not kept): 16 machines x 12 metrics x 30 min at 10 s, healthy. ``metrics.parquet``:
the same fleet for 20 min in which node-0005's GPU is throttled from 00:07:00, with a 30-s
blip on node-0011 and a job-wide slowdown from 00:12:00 (neither is a machine fault).
"""

from pathlib import Path

from faultsense_pipelines.minder import MinderSettings, save_model, train_minder
from faultsense_pipelines.minder.synth import Injection, generate_fleet

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    history = generate_fleet(16, 1800, seed=21)
    save_model(train_minder(history.array, MinderSettings(train_steps=100)), HERE / "model")
    scanned = generate_fleet(16, 1200, seed=22, injections=[
        Injection("gpu_throttle", "node-0005", 420.0),
        Injection("blip", "node-0011", 300.0, 30.0),
        Injection("job_slowdown", None, 720.0),
    ])  # fmt: skip
    scanned.to_frame(nan_rate=0.005).to_parquet(HERE / "metrics.parquet", index=False)
