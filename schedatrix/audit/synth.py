"""Seeded synthetic traces: answers known by construction, the lesson's hour, the benchmark.

``python -m schedatrix.audit.synth`` rewrites the lesson's packaged hour in schedatrix/data/
(byte for byte the same on every machine: one seeded generator, gzip with mtime 0).

The packaged hour has the shape of the Azure LLM inference trace 2023 (two one-hour samples,
the README's figures): a "code" service at about 2.6 requests/s, very bursty, input tokens
p50 / p95 about 1,469 / 7,302 and output 13 / 90; a "conversation" service at about 5.5
requests/s, input 1,020 / 4,083 and output 129 / 451. Rates are Poisson per second around a
per-minute level drawn from a gamma distribution (the code service's levels and seconds are
far more variable); lengths are lognormal with the stated median and 95th percentile.
"""

from __future__ import annotations

import gzip
import io
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = ["constant_rate_csv", "write_rows", "azure_like", "write_azure_like_hour",
           "packaged_hour", "two_pool_trace", "week_parquet", "HOUR_FILES", "HOUR_SEED"]

#: The lesson's packaged hour: pool -> file name in schedatrix/data/.
HOUR_FILES = {"large": "audit_hour_code.csv.gz", "small": "audit_hour_conv.csv.gz"}
#: The seed the packaged hour was drawn with.
HOUR_SEED = 2023
_HOUR_START = np.datetime64("2023-11-16T18:15:00", "us")
#: service: (mean requests/s, minute-level gamma shape, second-level gamma shape,
#:           input median, input p95, input cap, output median, output p95)
_SERVICES = {
    "code": (2.6, 0.8, 0.5, 1469, 7302, 7437, 13, 90),
    "conv": (5.5, 12.0, 40.0, 1020, 4083, 4142, 129, 451),
}


def write_rows(path: str | Path, header: str, columns: list[np.ndarray],
               fmt: list[str]) -> Path:
    """Write columns as a CSV file (``.gz`` compresses, with mtime 0 so bytes repeat)."""
    path = Path(path)
    buf = io.StringIO()
    buf.write(header + "\n")
    line = ",".join(fmt) + "\n"
    for row in zip(*(c.tolist() for c in columns), strict=True):
        buf.write(line % row)
    data = buf.getvalue().encode("utf-8")
    if path.suffix == ".gz":
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                    filename="") as gz:
            gz.write(data)
    else:
        path.write_bytes(data)
    return path


def constant_rate_csv(path: str | Path, rates_rps: dict[str, float], seconds: int,
                      input_tokens: int = 500, output_tokens: int = 100,
                      t0_s: float = 0.0) -> Path:
    """A generic CSV where each pool gets exactly `rate x seconds` requests, evenly spaced at
    (i + 0.5) / rate from t0: every whole bucket holds exactly rate x bucket requests (when
    that is a whole number), so its needs are known by construction."""
    t, pool = [], []
    for name, rate in rates_rps.items():
        n = int(round(rate * seconds))
        t.append(t0_s + (np.arange(n) + 0.5) / rate)
        pool.append(np.full(n, name, dtype=object))
    t_all, p_all = np.concatenate(t), np.concatenate(pool)
    n = len(t_all)
    return write_rows(path, "timestamp_s,pool,input_tokens,output_tokens",
                      [t_all, p_all, np.full(n, input_tokens), np.full(n, output_tokens)],
                      ["%.6f", "%s", "%d", "%d"])


def _lognormal(rng, n, median, p95, cap):
    sigma = np.log(p95 / median) / 1.6449
    return np.clip(np.rint(median * np.exp(sigma * rng.standard_normal(n))), 1, cap).astype(
        np.int64)


def azure_like(service: str, rng: np.random.Generator, seconds: int = 3600):
    """(arrival offsets in seconds, input tokens, output tokens) of one service's hour."""
    mean, k_min, k_sec, in_med, in_p95, in_cap, out_med, out_p95 = _SERVICES[service]
    minutes = -(-seconds // 60)
    level = rng.gamma(k_min, 1 / k_min, minutes).repeat(60)[:seconds]
    level *= rng.gamma(k_sec, 1 / k_sec, seconds)
    counts = rng.poisson(mean * level / level.mean())
    t = np.repeat(np.arange(seconds), counts) + rng.random(counts.sum())
    t.sort()
    n = len(t)
    return (t, _lognormal(rng, n, in_med, in_p95, in_cap),
            _lognormal(rng, n, out_med, out_p95, 8192))


def write_azure_like_hour(out_dir: str | Path, seed: int = HOUR_SEED) -> dict[str, Path]:
    """Write the two services of a synthetic Azure-shaped hour, in the Azure CSV format."""
    rng = np.random.default_rng(seed)
    out = {}
    # the real samples: conversation 18:15:46 to 19:14:08, code 18:17:03 to 19:14:19
    for pool, service, start, seconds in (("large", "code", 77, 3437), ("small", "conv", 0, 3503)):
        t, inp, outp = azure_like(service, rng, seconds)
        stamps = _HOUR_START + np.timedelta64(46, "s") + np.rint(
            (t + start) * 1e6).astype("timedelta64[us]")
        text = np.char.replace(np.datetime_as_string(stamps, unit="us"), "T", " ")
        out[pool] = write_rows(Path(out_dir) / HOUR_FILES[pool],
                               "TIMESTAMP,ContextTokens,GeneratedTokens", [text, inp, outp],
                               ["%s", "%d", "%d"])
    return out


def packaged_hour() -> dict[str, Path]:
    """The lesson's shipped hour: pool -> path of its Azure-format file."""
    data = resources.files("schedatrix") / "data"
    return {pool: Path(str(data / name)) for pool, name in HOUR_FILES.items()}


def two_pool_trace(path: str | Path, n_requests: int, seed: int = 1,
                   rps: float = 400.0, gap_s: float = 0.0) -> Path:
    """A generic CSV of `n_requests` over two pools (70% small, 30% large), epoch-second
    timestamps in shuffled order (arrivals needn't be sorted), time to first token and a
    replica id per request: the benchmark's trace. `gap_s` moves the later half of the
    arrivals that many seconds later (a trace with a gap)."""
    rng = np.random.default_rng(seed)
    t = 1_700_000_000 + np.sort(rng.random(n_requests)) * (n_requests / rps)
    t[n_requests // 2:] += gap_s
    large = rng.random(n_requests) < 0.3
    inp = np.where(large, _lognormal(rng, n_requests, 1469, 7302, 32_000),
                   _lognormal(rng, n_requests, 1020, 4083, 32_000))
    outp = np.where(large, _lognormal(rng, n_requests, 200, 900, 8192),
                    _lognormal(rng, n_requests, 129, 451, 8192))
    ttft_ms = np.rint(rng.gamma(2.0, 120.0, n_requests) * np.where(large, 2.0, 1.0))
    replica = np.where(large, "L", "S").astype(object) + rng.integers(0, 8, n_requests).astype(
        str).astype(object)
    order = rng.permutation(n_requests)
    pool = np.where(large, "large", "small").astype(object)
    return write_rows(path, "timestamp_s,pool,input_tokens,output_tokens,ttft_ms,replica",
                      [c[order] for c in (t, pool, inp, outp, ttft_ms, replica)],
                      ["%.3f", "%s", "%d", "%d", "%d", "%s"])


def week_parquet(folder: str | Path, n_requests: int, n_files: int = 20, seed: int = 1,
                 days: float = 7.0) -> list[Path]:
    """A week of two-pool traffic (70% small, 30% large) as `n_files` Parquet files, each a
    consecutive stretch of time in arrival order (as traces are split): epoch-second times,
    the pool as a dictionary column, token counts as int32. The benchmark's big trace."""
    import pyarrow as pa  # noqa: PLC0415 - only the benchmark writes Parquet
    import pyarrow.parquet as pq  # noqa: PLC0415

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    span_s = days * 86_400
    pools = pa.array(["small", "large"])
    paths = []
    for k in range(n_files):
        rng = np.random.default_rng([seed, k])
        n = n_requests // n_files + (1 if k < n_requests % n_files else 0)
        lo = span_s * k / n_files
        t = 1_700_000_000 + lo + np.sort(rng.random(n)) * (span_s / n_files)
        large = rng.random(n) < 0.3
        inp = np.where(large, _lognormal(rng, n, 1469, 7302, 32_000),
                       _lognormal(rng, n, 1020, 4083, 32_000)).astype(np.int32)
        outp = np.where(large, _lognormal(rng, n, 200, 900, 8192),
                        _lognormal(rng, n, 129, 451, 8192)).astype(np.int32)
        table = pa.table({
            "timestamp_s": t,
            "pool": pa.DictionaryArray.from_arrays(pa.array(large.astype(np.int8)), pools),
            "input_tokens": inp, "output_tokens": outp})
        paths.append(folder / f"part-{k:03d}.parquet")
        pq.write_table(table, paths[-1], row_group_size=1 << 20)
    return paths


if __name__ == "__main__":
    target = Path(__file__).resolve().parents[1] / "data"
    for pool, p in write_azure_like_hour(target).items():
        print(f"{pool}: {p}")
