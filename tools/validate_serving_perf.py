"""Print the serving performance model's predictions beside the profiled GPUs, as Markdown.

For every GPU, model and tensor-parallel degree in ``../shared/serving-data``: the error of each
operator family (median and worst absolute error, predicted / profiled - 1) and of whole layers;
predicted and profiled times of whole layers at a few batch sizes; the collectives; the summary
per GPU; and the three whole-step figures the data's README quotes (Llama-2-7B, A100, TP1). Uses
the coefficients in the package (``tools/calibrate_serving.py`` writes them):

    python tools/validate_serving_perf.py [--data ../shared/serving-data] [--write-doc]

Without the data it prints why and exits 0. ``--write-doc`` also puts the output into
docs/serving-calibration.md, between its two ``validate_serving_perf.py`` markers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / ".." / "shared" / "serving-data"
DOC = ROOT / "docs" / "serving-calibration.md"
BEGIN, END = "<!-- validate_serving_perf.py: begin -->", "<!-- validate_serving_perf.py: end -->"

#: Columns of the per-shape table: (heading, family name in profile_errors.error_rows).
FAMILIES = (
    ("QKV", "matmul attn_pre_proj"), ("out", "matmul attn_post_proj"),
    ("gate+up", "matmul mlp_up_proj"), ("down", "matmul mlp_down_proj"),
    ("elementwise", "elementwise (per layer)"), ("embedding", "embedding"),
    ("attn prefill", "attention prefill"), ("attn decode", "attention decode"),
    ("layer, decode-sized", ("layer w/o attention, decode-sized",
                             "decode layer (matmuls + attention)")),
    ("layer, prefill-sized", ("layer w/o attention, prefill-sized",
                              "prefill layer (matmuls + attention)")),
)
#: Whole layers shown with their times: Vidur (tokens), H200 decode (batch, context), prefill.
VIDUR_POINTS = (1, 64, 512, 4096)
H200_DECODE_POINTS = ((1, 1024), (64, 1024), (256, 2048))
H200_PREFILL_POINTS = (512, 2048, 8192)


def pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def cell(rows: list[dict]) -> str:
    if not rows:
        return "-"
    r = rows[0]
    return f"{100 * r['median']:.1f} / {100 * r['worst']:.0f}"


def shape_table(rows: list[dict]) -> list[str]:
    head = "| GPU | model | TP | " + " | ".join(h for h, _ in FAMILIES) + " |"
    out = [head, "|" + "---|" * (3 + len(FAMILIES))]
    shapes = sorted({(r["gpu"], r["model"], r["tp"]) for r in rows if r["model"] != "-"},
                    key=lambda k: (k[0], k[1], k[2]))
    for g, m, tp in shapes:
        cells = []
        for _, family in FAMILIES:
            names = family if isinstance(family, tuple) else (family,)
            cells.append(cell([r for r in rows if r["family"] in names and r["gpu"] == g
                               and r["model"] == m and r["tp"] == tp]))
        out.append(f"| {g} | {m} | {tp} | " + " | ".join(cells) + " |")
    return out


def times_table(layers: list[dict]) -> list[str]:
    out = ["| GPU | model | TP | layer | tokens | context | profiled ms | predicted ms | error |",
           "|---|---|---|---|---|---|---|---|---|"]
    seen = set()
    for x in sorted(layers, key=lambda x: (x["gpu"], x["model"], x["tp"], x["kind"],
                                           x["tokens"], x["context"])):
        key = (x["gpu"], x["model"], x["tp"], x["kind"], x["tokens"], x["context"])
        if key in seen:  # Vidur repeats a few token counts: show the first
            continue
        seen.add(key)
        vidur = x["gpu"] != "h200" and x["tokens"] in VIDUR_POINTS
        decode = (x["kind"].startswith("decode layer")
                  and (x["tokens"], x["context"]) in H200_DECODE_POINTS)
        prefill = x["kind"].startswith("prefill layer") and x["tokens"] in H200_PREFILL_POINTS
        if not (vidur or decode or prefill):
            continue
        kind = "w/o attention" if vidur else x["kind"].split(" (")[0]
        err = x["predicted_s"] / x["measured_s"] - 1
        out.append(f"| {x['gpu']} | {x['model']} | {x['tp']} | {kind} | {x['tokens']} | "
                   f"{x['context'] or '-'} | {1e3 * x['measured_s']:.3f} | "
                   f"{1e3 * x['predicted_s']:.3f} | {pct(err)} |")
    return out


def network_table(rows: list[dict]) -> list[str]:
    out = ["| GPU | collective | GPUs | samples | median error | worst | bias |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["model"] == "-":
            out.append(f"| {r['gpu']} | {r['family']} | {r['tp']} | {r['n']} | "
                       f"{100 * r['median']:.1f}% | {100 * r['worst']:.0f}% | {pct(r['bias'])} |")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the serving-data folder")
    parser.add_argument("--write-doc", action="store_true",
                        help=f"also write the output into {DOC.relative_to(ROOT)}")
    args = parser.parse_args()
    if not args.data.is_dir():
        print(f"no profiled data at {args.data} (it lives in the workspace's shared/ folder "
              "beside the repository); nothing to compare")
        return 0
    sys.path.insert(0, str(ROOT))
    from schedatrix.serving.perf.coefficients import COEFFICIENTS, DATA_DIGEST
    from schedatrix.serving.perf.profile_errors import (
        error_rows,
        layer_samples,
        summary,
        whole_steps,
    )
    from schedatrix.serving.perf.profiles import read_profiles

    profiles = read_profiles(args.data)
    rows = error_rows(profiles, COEFFICIENTS)
    out = [f"Coefficients fitted from data digest {DATA_DIGEST}.", "",
           "#### Whole steps the data's README quotes (Llama-2-7B, A100, TP1)", "",
           "| step | profiled ms | predicted ms | error |", "|---|---|---|---|"]
    for label, predicted, profiled in whole_steps(COEFFICIENTS):
        out.append(f"| {label} | {1e3 * profiled:.1f} | {1e3 * predicted:.1f} | "
                   f"{pct(predicted / profiled - 1)} |")
    out += ["", "#### Summary per GPU (absolute error, predicted / profiled - 1)", "",
            "| GPU | kind | samples | median | worst |", "|---|---|---|---|---|"]
    for s in summary(rows):
        out.append(f"| {s['gpu']} | {s['kind']} | {s['samples']} | {100 * s['median']:.1f}% | "
                   f"{100 * s['worst']:.0f}% |")
    out += ["", "#### Per model, GPU and TP degree: median / worst absolute error, %", ""]
    out += shape_table(rows)
    out += ["", "#### Whole layers: predicted vs profiled times", ""]
    out += times_table(layer_samples(profiles, COEFFICIENTS))
    out += ["", "#### Collectives", ""]
    out += network_table(rows)
    text = "\n".join(out)
    print(text)
    if args.write_doc:
        doc = DOC.read_text()
        head, _, rest = doc.partition(BEGIN)
        _, _, tail = rest.partition(END)
        DOC.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
