"""What an encoder's tokenizer makes of our tokens (``embeddings/transformer.py`` reads these).

- **Sub-words.** Each token is tokenised on its own (``subword_pieces``); a token that yields
  nothing gets the unknown sub-word, and a pair's separator the tokenizer's [SEP].
- **Windows.** Consecutive token ranges whose sub-words fit the encoder's positions
  (``windows``, ``window_limit``); a pair's second text may start a window of its own.
- **Segments.** BERT's token types of a pair's two texts (``token_segments``).
- **Fit.** A tokenizer of another model is refused (``check_tokenizer_fits``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from seqtransfer.errors import SeqTransferError

# The token that joins a sentence pair's two texts into one token list (data/tsv.py writes it
# between them; each encoder reads it as its own separator).
PAIR_SEPARATOR = "[SEP]"

# A model may round its embedding table up past its tokenizer's sub-words (to a multiple of 64 or
# 128, for faster matrix products: T5 32,100 -> 32,128, DeBERTa-v3 128,001 -> 128,100), or keep
# spare rows (up to about 2 %: Qwen2 151,646 -> 151,936, Phi-2 50,295 -> 51,200); more extra rows
# mean another model's tokenizer (BERT's cased 28,996 beside the uncased 30,522: 5 %).
TABLE_ROUNDING = 128
SPARE_ROWS = 0.02
SPECIAL_TOKENS = ("pad", "cls", "bos", "sep", "eos", "unk", "mask")


def check_tokenizer_fits(tokenizer, config, path: Path) -> None:
    """Refuse a tokenizer of another model: one with more sub-words than the model's table, or fewer
    than rounding the table up or keeping spare rows explains (``TABLE_ROUNDING``, ``SPARE_ROWS``),
    a special token outside the table, or another padding id."""
    sub_words, table = len(tokenizer), config.vocab_size
    if not 0 <= table - sub_words < max(TABLE_ROUNDING, SPARE_ROWS * table):
        raise SeqTransferError(f"tokenizer ({sub_words} sub-words) and model ({table}) do not match", path=path, hint="put the tokenizer of this model in the folder")
    for special in SPECIAL_TOKENS:
        identifier = getattr(tokenizer, f"{special}_token_id", None)
        if identifier is not None and not 0 <= identifier < table:
            raise SeqTransferError(
                f"tokenizer's {special} token is sub-word {identifier}, outside the model's table ({table}): not this model's tokenizer",
                path=path,
                hint="put the tokenizer of this model in the folder",
            )
    model_pad = getattr(config, "pad_token_id", None)
    if model_pad is not None and tokenizer.pad_token_id is not None and tokenizer.pad_token_id != model_pad:
        raise SeqTransferError(
            f"tokenizer pads with sub-word {tokenizer.pad_token_id}, the model with {model_pad}: not this model's tokenizer", path=path, hint="put the tokenizer of this model in the folder"
        )


def subword_pieces(tokenizer, tokens: Sequence[str]) -> list[list[int]]:
    """Sub-word ids of each token tokenised alone (after a space where the tokenizer marks word
    starts by one: byte-level BPE's "Ġword", as the encoder saw words inside its pretraining
    sentences); a token that yields none gets the unknown id."""
    prefix = " " if marks_spaces(tokenizer) else ""
    encoded = tokenizer([prefix + token for token in tokens], add_special_tokens=False)["input_ids"] if tokens else []
    unknown = tokenizer.unk_token_id if tokenizer.unk_token_id is not None else 0
    separator = [tokenizer.sep_token_id] if tokenizer.sep_token_id is not None else None
    return [separator if token == PAIR_SEPARATOR and separator else pieces if pieces else [unknown] for token, pieces in zip(tokens, encoded)]


@functools.lru_cache(maxsize=8)
def marks_spaces(tokenizer) -> bool:
    """Whether a word after a space has other sub-words than the same word alone (byte-level BPE:
    RoBERTa, GPT-2); WordPiece and our own LMs' tokenizers drop the space."""
    probe = tokenizer(["a", " a"], add_special_tokens=False)["input_ids"]
    return probe[0] != probe[1]


def windows(pieces: list[list[int]], limit: int, breaks: frozenset[int] = frozenset()) -> list[tuple[int, int]]:
    """Consecutive token ranges [start, end) whose sub-words fit in ``limit`` (a token longer than
    the limit is cut to it); a new range also starts at each token index of ``breaks``."""
    ranges, start, used = [], 0, 0
    for index, token_pieces in enumerate(pieces):
        size = min(len(token_pieces), limit)
        if (used + size > limit or index in breaks) and index > start:
            ranges.append((start, index))
            start, used = index, 0
        used += size
    ranges.append((start, len(pieces)))
    return ranges


def pair_breaks(tokens: Sequence[str], separate: bool) -> frozenset[int]:
    """Where a pair's second text starts its own window when the texts are encoded ``separate``ly
    (the separator token ends the first text's window): the To-tune paper's Table 4."""
    return frozenset(index + 1 for index, token in enumerate(tokens) if token == PAIR_SEPARATOR) if separate else frozenset()


def token_segments(tokens: Sequence[str]) -> list[int]:
    """Per token its BERT segment, 0 up to a pair's separator (A [SEP]) and 1 after it (B), then
    one more entry: the segment after the last token. (T + 1) values."""
    segments, segment = [], 0
    for token in tokens:
        segments.append(segment)
        segment = 1 if token == PAIR_SEPARATOR else segment
    return [*segments, segment]


# Model types whose position ids start after the padding id (fairseq's convention): RoBERTa's and
# MPNet's 514 positions hold 512 sub-words.
POSITION_OFFSET_TYPES = frozenset({"roberta", "xlm-roberta", "camembert", "mpnet", "longformer", "data2vec-text"})


def window_limit(config: dict, tokenizer) -> int:
    """Sub-words per window: the encoder's usable positions (and the tokenizer's maximum) minus the two special tokens."""
    positions = int(config.get("max_position_embeddings", 512))
    if config.get("model_type") in POSITION_OFFSET_TYPES:
        padding = config.get("pad_token_id")
        positions -= (1 if padding is None else int(padding)) + 1
    return min(positions, int(min(getattr(tokenizer, "model_max_length", 512) or 512, 10**6))) - 2
