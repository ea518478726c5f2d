"""Where a run's mistakes fall by kind of token: Twitter markup, numbers, symbols or ordinary words.

A source model trained on news or web text has never seen how a tweet treebank labels its
markup (TweeBank tags an @mention PROPN or X, "RT" X, a hashtag by its role), and no label-free
method can teach it: every model it trains agrees with the source there. This analysis shows how
much of a run's error those tokens make. Each token gets the first kind whose rule matches:

1. ``url``: starts with ``http://``, ``https://`` or ``www.`` (any case);
2. ``mention``: ``@`` or ``＠`` then a letter, digit or underscore;
3. ``hashtag``: ``#`` or ``＃`` then a letter, digit or underscore;
4. ``retweet``: ``RT`` in any case, with or without a colon (``rt``, ``RT:``);
5. ``number``: digits, optionally signed or with a currency sign, with ``,``, ``.``, ``:``, ``/``
   or ``-`` between them, and an optional ``%`` (1,000.50, 12:30, -5, $5, 1/2, 5%, .5);
6. ``symbol``: no letter or digit at all (punctuation, emoticons, emoji);
7. ``word``: anything else.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from seqtransfer.analysis.predictions import Predictions, predictions_path, read_predictions
from seqtransfer.errors import SeqTransferError

KINDS = ("url", "mention", "hashtag", "retweet", "number", "symbol", "word")
_RULES = (
    ("url", re.compile(r"^(?:https?://|www\.)", re.IGNORECASE)),
    ("mention", re.compile(r"^[@＠]\w")),
    ("hashtag", re.compile(r"^[#＃]\w")),
    ("retweet", re.compile(r"^RT:?$", re.IGNORECASE)),
    ("number", re.compile(r"^[-+±$€£]?\d*[.,]?\d+(?:[.,:/-]\d+)*%?$")),
    ("symbol", re.compile(r"^[\W_]+$")),
)


def token_kind(token: str) -> str:
    """The first kind whose rule ``token`` matches (``word`` when none does)."""
    return next((kind for kind, rule in _RULES if rule.search(token)), "word")


def run_predictions(path: str | Path, split: str) -> Predictions:
    """A run's predictions of ``split``: those of the one other dataset it was scored on (its
    ``test-on-*`` folder: a grid cell's score when the target sets ``test_on``), else its own
    ``predictions/``; or a prediction file given directly."""
    path = Path(path)
    if path.is_file():
        return read_predictions(path)
    elsewhere = sorted(path.glob(f"test-on-*/{split}.conll"))
    if len(elsewhere) > 1:
        raise SeqTransferError(f"the run was scored on {len(elsewhere)} other datasets", path=path, hint=f"pass one prediction file, e.g. {elsewhere[0]}")
    return read_predictions(elsewhere[0] if elsewhere else predictions_path(path, split))


def errors_by_kind(predictions: Predictions) -> dict:
    """Per kind: tokens, their share of all tokens, accuracy, and share of all errors (percentages)."""
    tokens, wrong = Counter(), Counter()
    for sentence, gold, predicted in zip(predictions.tokens, predictions.gold, predictions.predicted):
        for token, gold_label, predicted_label in zip(sentence, gold, predicted):
            kind = token_kind(token)
            tokens[kind] += 1
            wrong[kind] += gold_label != predicted_label
    total, errors = sum(tokens.values()), sum(wrong.values())
    if not total:
        raise SeqTransferError("no tokens in the prediction file", path=predictions.path, hint="pass a run scored on a labelled split")
    kinds = {kind: {"tokens": tokens[kind], "share_of_tokens": 100.0 * tokens[kind] / total, "accuracy": 100.0 * (tokens[kind] - wrong[kind]) / tokens[kind],
                    "share_of_errors": 100.0 * wrong[kind] / errors if errors else 0.0} for kind in KINDS if tokens[kind]}
    return {"file": str(predictions.path), "tokens": total, "accuracy": 100.0 * (total - errors) / total if total else 0.0, "kinds": kinds}


def kinds_table(results: dict[str, dict]) -> list[str]:
    """Markdown: one row per kind, for each run its accuracy and share of the errors."""
    names = list(results)
    kinds = [kind for kind in KINDS if any(kind in result["kinds"] for result in results.values())]
    first = results[names[0]]
    header = ["kind", "share of tokens", *(f"{name}: acc. / share of errors" for name in names)]
    rows = [["all", "100.0 %", *(f"{results[name]['accuracy']:.2f} / 100 %" for name in names)]]
    for kind in kinds:
        cells = [f"{results[name]['kinds'][kind]['accuracy']:.1f} / {results[name]['kinds'][kind]['share_of_errors']:.1f} %" if kind in results[name]["kinds"] else "–"
                 for name in names]
        share = first["kinds"].get(kind, {}).get("share_of_tokens")
        rows.append([kind, "–" if share is None else f"{share:.1f} %", *cells])
    read = [f"{name}: {result['file']}" for name, result in results.items()]
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(row) + " |" for row in rows), "", "Read: " + "; ".join(read) + "."]
