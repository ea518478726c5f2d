"""How often each raw-text tokenizer splits a sentence exactly as a dataset's gold tokens do.

Reads every sentence of a registered dataset's split (or a CoNLL-U file) that has a
``# text = ...`` comment and compares the tokens each tokenizer makes of that text with the
sentence's tokens (merged 1:n tokens as the data writes them):

    python scripts/tokenizer_agreement.py mtt_sl_news mtt_hr_news mtt_sr_news mtt_sl_sm mtt_hr_sm mtt_sr_sm tweebank --split test
"""

from __future__ import annotations

import argparse
from pathlib import Path

from seqtransfer.config import DataConfig
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.conllu import read_conllu
from seqtransfer.data.tokenize import TOKENIZERS


def sentence_texts(name: str, split: str) -> list[tuple[str, list[str]]]:
    """(text, gold tokens) of every sentence with a ``# text`` comment: of a CoNLL-U file, or of a
    registered dataset's split (read as the registry reads it: its quirks repaired)."""
    sentences = read_conllu(name) if Path(name).is_file() else load_task_data(DataConfig(dataset=name), (split,)).splits[split]
    pairs = []
    for sentence in sentences:
        text = next((comment.split(" = ", 1)[1] for comment in sentence.comments if comment.startswith("text = ")), None)
        if text is not None:
            pairs.append((text, list(sentence.tokens)))
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="+", help="registered datasets (or CoNLL-U files) whose sentences have # text comments")
    parser.add_argument("--split", default="test", help="split of the registered datasets (default test)")
    arguments = parser.parse_args()
    names = [name for name in TOKENIZERS if name != "whitespace"]
    print("| data | sentences | " + " | ".join(names) + " |")
    print("|:---|---:|" + "---:|" * len(names))
    for path in arguments.data:
        pairs = sentence_texts(path, arguments.split)
        if not pairs:
            continue
        shares = [100.0 * sum(TOKENIZERS[name](text) == tokens for text, tokens in pairs) / len(pairs) for name in names]
        print(f"| {path} | {len(pairs)} | " + " | ".join(f"{share:.1f} %" for share in shares) + " |")


if __name__ == "__main__":
    main()
