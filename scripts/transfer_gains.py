"""Write docs/results/similarity/gains.csv: From-scratch and fine-tuned (SFT) test scores of each
source→target pair, read from the committed report CSVs (3 seeds each), for
`seqtransfer analyze similarity --gains` (distance against the gain of transfer).

    python scripts/transfer_gains.py && seqtransfer analyze similarity --gains docs/results/similarity/gains.csv ...
"""

from __future__ import annotations

import csv
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
# report CSV -> (From-scratch method, transferred method, {target: (target corpus, source corpus)})
PAIRS = {
    "pretrand_table4.csv": (
        "From-scratch200",
        "Fine-tuning",
        {
            "TPoS": ("tpos", "conll2000+ptb_sample"),
            "ArK": ("ark", "conll2000+ptb_sample"),
            "TweeBank": ("tweebank", "conll2000+ptb_sample"),
            "TChunk": ("tchunk", "conll2000"),
            "WNUT": ("wnut17", "conll2003"),
        },
    ),
    "mutspad_parsing.csv": ("Mono-task", "Mono-task pretraining", {"TweeBank": ("tweebank", "ud_ewt")}),
}


def main() -> None:
    rows = []
    for name, (scratch_method, transfer_method, targets) in PAIRS.items():
        means = {(row["method"], row["target"]): row for row in csv.DictReader((RESULTS / name).open(encoding="utf-8"))}
        for target, (target_corpus, source_corpus) in targets.items():
            scratch, transferred = means[scratch_method, target], means[transfer_method, target]
            note = f"{name.removesuffix('.csv')} {target} {scratch['metric']}, {transfer_method} vs {scratch_method}, {scratch['n']} seeds"
            rows.append({"source": source_corpus, "target": target_corpus, "scratch": scratch["mean"], "transferred": transferred["mean"], "note": note})
    output = RESULTS / "similarity" / "gains.csv"
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["source", "target", "scratch", "transferred", "note"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} pairs written to {output}")


if __name__ == "__main__":
    main()
