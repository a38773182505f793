"""Draw the committed Hopper results as ratio plots for the README (tessera.testing.plot_lines).

    python benchmarks/plot_results.py            # writes docs/img/hopper-gemm-layouts.png, hopper-attention.png

Each plot is Tessera's throughput over the peer's (cuBLAS, cuDNN) per configuration, from the JSON a
device run committed under benchmarks/results/; the dashed line is parity. Nothing is measured here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tessera.testing import plot_lines  # noqa: E402

PLOTS = [
    ("hopper-gemm-layouts.json", "hopper-gemm-layouts.png", "sm_90a GEMM on an {gpu}, bf16: Tessera / cuBLAS",
     {"ratio_default": "default config", "ratio": "tuned"}),
    ("hopper-attention.json", "hopper-attention.png", "sm_90a flash attention on an {gpu}, bf16: Tessera / cuDNN",
     {"ratio": "Tessera / cuDNN"}),
]


def draw(results: Path, out_dir: Path) -> list[Path]:
    written = []
    for src, png, title, columns in PLOTS:
        doc = json.loads((results / src).read_text())
        rows = doc["rows"]
        gpu = str(doc.get("device") or doc.get("gpu") or "unnamed GPU")
        gpu = "H200" if "H200" in gpu else "H100" if "H100" in gpu else gpu  # the card, as the run named it
        title = title.format(gpu=gpu)
        if "tuned" in columns.values() and not any(r.get("tuned_config") for r in rows):
            columns = {k: v for k, v in columns.items() if v != "tuned"}  # a run without tuning: default only
        table = [{"config": r["config"], **{name: r[key] for key, name in columns.items()}} for r in rows
                 if all(isinstance(r.get(k), (int, float)) for k in columns)]
        out_dir.mkdir(parents=True, exist_ok=True)
        plot_lines(table, "config", list(columns.values()), str(out_dir / png), title=title, xlabel="",
                   ylabel="throughput ratio", reference=1.0)
        written.append(out_dir / png)
    return written


if __name__ == "__main__":
    for path in draw(ROOT / "benchmarks" / "results", ROOT / "docs" / "img"):
        print(path.relative_to(ROOT))
