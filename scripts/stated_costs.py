"""Write each experiment's stated cost again from its records file, where the cost names one.

    python scripts/stated_costs.py          # list the stale ones
    python scripts/stated_costs.py --write  # and rewrite them in place

The format is the one tests/test_committed_pages.py holds: "N cells recorded (seeds ...) trained in
H h ... (docs/results/NAME.records.jsonl)". Run it with new records, before committing them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from seqtransfer.experiments.shipped import STATED_COST, stated_and_recorded_cost

ROOT = Path(__file__).resolve().parent.parent


def main(write: bool) -> int:
    stale = 0
    for path in sorted((ROOT / "src" / "seqtransfer" / "paper_experiments").glob("*.yaml")):
        costs = stated_and_recorded_cost(path, ROOT)
        if costs is None or costs[0] == costs[1]:
            continue
        (cells, hours), (counted, summed), line = costs
        stale += 1
        print(f"{path.name}: {cells} cells, {hours} h -> {counted} cells, {summed} h")
        if write:
            text = path.read_text(encoding="utf-8")
            match = STATED_COST.search(text)
            path.write_text(text[: match.start()] + line + text[match.end() :], encoding="utf-8")
    return 1 if stale and not write else 0


if __name__ == "__main__":
    sys.exit(main("--write" in sys.argv[1:]))
