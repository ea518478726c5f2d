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
    """List each experiment file whose stated cost its records no longer give (with --write, write it
    again); exit status 1 where one is stale and not written."""
    stale = 0
    for path in sorted((ROOT / "src" / "seqtransfer" / "paper_experiments").glob("*.yaml")):
        cost = stated_and_recorded_cost(path, ROOT)
        if cost is None or cost.stated == cost.recorded:
            continue
        stale += 1
        print(f"{path.name}: {cost.stated[0]} cells, {cost.stated[1]} h -> {cost.recorded[0]} cells, {cost.recorded[1]} h")
        if write:
            text = path.read_text(encoding="utf-8")
            match = STATED_COST.search(text)
            path.write_text(text[: match.start()] + cost.line + text[match.end() :], encoding="utf-8")
    return 1 if stale and not write else 0


if __name__ == "__main__":
    sys.exit(main("--write" in sys.argv[1:]))
