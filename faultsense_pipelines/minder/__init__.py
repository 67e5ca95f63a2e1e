"""Minder: find the faulty machine from the fleet's own monitoring metrics.

Machines in one distributed job do the same work, so their metrics look alike; Minder
denoises each metric with an LSTM-VAE, flags the machine far from all the others in a
window, and calls it faulty once it has stayed the outlier for a while (about 5 minutes).

    array = load_metrics("metrics.parquet")       # io: long format -> machine x time x metric
    model = train_minder(history)                 # train: normalization, denoisers, priority
    faults = scan(array, model)                   # detect: similarity + continuity + onset

Modules: io, synth (generator), model (LSTM-VAE), windows, similarity, continuity,
priority, settings, train, store (safetensors + JSON), detect.

References:
    Deng et al., "Minder: Faulty Machine Detection for Large-scale Distributed Model
    Training", NSDI '25 (arXiv 2411.01791).
"""

from faultsense_pipelines.minder.detect import Fault, scan
from faultsense_pipelines.minder.io import MetricArray, load_metrics, to_metric_array
from faultsense_pipelines.minder.settings import MinderSettings
from faultsense_pipelines.minder.store import load_model, save_model
from faultsense_pipelines.minder.train import FaultLabel, MinderModel, train_minder

__all__ = [
    "Fault",
    "FaultLabel",
    "MetricArray",
    "MinderModel",
    "MinderSettings",
    "load_metrics",
    "load_model",
    "save_model",
    "scan",
    "to_metric_array",
    "train_minder",
]
