"""The emulator's ``/metrics``: Prometheus' text format under vLLM V1's metric names.

The names, types, labels (``model_name``, ``engine``: here one engine per replica) and
histogram buckets are vLLM V1's (its Production Metrics page and ``vllm/v1/metrics/
loggers.py``), so a dashboard or autoscaler built on a vLLM deployment reads the emulator
unchanged. Times are the model's seconds (wall seconds x ``--speed``). The state gauges, the
preemption count and the prefix cache's counters (``vllm:prefix_cache_queries``: prompt tokens
looked up; ``vllm:prefix_cache_hits``: tokens found cached, as V1's ``PrometheusStatLogger``
names and counts them; 0 with ``--prefix-block-tokens`` off) are read from the fleet at each
scrape; the histograms and token counters are filled as requests run. Needs
``prometheus_client`` (the ``live`` extra).
"""

from __future__ import annotations

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

__all__ = ["Metrics", "TTFT_BUCKETS", "ITL_BUCKETS", "REQUEST_LATENCY_BUCKETS", "CONTENT_TYPE"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: vLLM V1's buckets (seconds).
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
               7.5, 10.0, 20.0, 40.0, 80.0)
REQUEST_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
                           40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
_LABELS = ("model_name", "engine")


class _FleetState:
    """Gauges and the preemption counter, read from the driver at each scrape."""

    def __init__(self, driver, model_name: str):
        self.driver, self.model_name = driver, model_name

    def describe(self):
        return []

    def collect(self):
        d = self.driver
        running = GaugeMetricFamily("vllm:num_requests_running",
                                    "Number of requests in model execution batches.",
                                    labels=_LABELS)
        waiting = GaugeMetricFamily("vllm:num_requests_waiting",
                                    "Number of requests waiting to be processed.",
                                    labels=_LABELS)
        kv = GaugeMetricFamily("vllm:kv_cache_usage_perc",
                               "KV-cache usage. 1 means 100 percent usage.", labels=_LABELS)
        pre = CounterMetricFamily("vllm:num_preemptions",
                                  "Cumulative number of preemption from the engine.",
                                  labels=_LABELS)
        queries = CounterMetricFamily("vllm:prefix_cache_queries",
                                      "Prefix cache queries, in terms of number of queried "
                                      "tokens.", labels=_LABELS)
        hits = CounterMetricFamily("vllm:prefix_cache_hits",
                                   "Prefix cache hits, in terms of number of cached tokens.",
                                   labels=_LABELS)
        used = d.used
        if used:
            sim = d.sim
            rep = np.frombuffer(sim.replica_of, dtype=np.int64)[:used]
            counts = np.frombuffer(sim.preemptions, dtype=np.int64)[:used]
            per = np.bincount(rep[rep >= 0], weights=counts[rep >= 0], minlength=d.replicas)
        else:
            per = np.zeros(d.replicas)
        for r in range(d.replicas):
            s = d.replica_state(r)
            labels = [self.model_name, str(r)]
            running.add_metric(labels, s["running"])
            waiting.add_metric(labels, s["waiting"])
            kv.add_metric(labels, s["kv_used_blocks"] / s["kv_blocks"] if s["kv_blocks"] else 0)
            pre.add_metric(labels, float(per[r]))
            q, h = d.prefix_cache(r)
            queries.add_metric(labels, float(q))
            hits.add_metric(labels, float(h))
        yield from (running, waiting, kv, pre, queries, hits)


class Metrics:
    """One registry per emulator (``text()`` renders it)."""

    def __init__(self, driver, model_name: str):
        self.model_name = model_name
        self.registry = reg = CollectorRegistry(auto_describe=True)
        reg.register(_FleetState(driver, model_name))
        self.prompt_tokens = Counter("vllm:prompt_tokens", "Number of prefill tokens processed.",
                                     _LABELS, registry=reg)
        self.generation_tokens = Counter("vllm:generation_tokens",
                                         "Number of generation tokens processed.", _LABELS,
                                         registry=reg)
        self.success = Counter("vllm:request_success", "Count of successfully processed "
                               "requests.", (*_LABELS, "finished_reason"), registry=reg)
        self.ttft = Histogram("vllm:time_to_first_token_seconds",
                              "Histogram of time to first token in seconds.", _LABELS,
                              buckets=TTFT_BUCKETS, registry=reg)
        self.itl = Histogram("vllm:inter_token_latency_seconds",
                             "Histogram of inter-token latency in seconds.", _LABELS,
                             buckets=ITL_BUCKETS, registry=reg)
        self.e2e = Histogram("vllm:e2e_request_latency_seconds",
                             "Histogram of e2e request latency in seconds.", _LABELS,
                             buckets=REQUEST_LATENCY_BUCKETS, registry=reg)
        self.queue = Histogram("vllm:request_queue_time_seconds",
                               "Histogram of time spent in WAITING phase for request.", _LABELS,
                               buckets=REQUEST_LATENCY_BUCKETS, registry=reg)

    def _labels(self, replica: int) -> tuple[str, str]:
        return self.model_name, str(max(replica, 0))

    def first_token(self, replica: int, ttft_s: float, queue_s: float,
                    prompt_tokens: int) -> None:
        lab = self._labels(replica)
        self.ttft.labels(*lab).observe(ttft_s)
        if queue_s == queue_s:
            self.queue.labels(*lab).observe(queue_s)
        self.prompt_tokens.labels(*lab).inc(prompt_tokens)
        self.generation_tokens.labels(*lab).inc()

    def next_token(self, replica: int, gap_s: float) -> None:
        lab = self._labels(replica)
        self.itl.labels(*lab).observe(gap_s)
        self.generation_tokens.labels(*lab).inc()

    def finished(self, replica: int, e2e_s: float, reason: str = "length") -> None:
        lab = self._labels(replica)
        self.e2e.labels(*lab).observe(e2e_s)
        self.success.labels(*lab, reason).inc()

    def text(self) -> bytes:
        return generate_latest(self.registry)
