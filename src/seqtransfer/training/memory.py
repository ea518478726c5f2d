"""Memory a batch will take, checked before it runs: a parser's arc scores grow with the square of
a sentence's length (one 10,000-token sentence: gigabytes), so its longest batch is estimated
against what the machine has, and refused with one line naming the sentence and the option that
avoids it."""

from __future__ import annotations

from collections.abc import Sequence

from seqtransfer.errors import SeqTransferError
from seqtransfer.models.biaffine import arc_score_bytes
from seqtransfer.resources import available_memory_bytes

USABLE_SHARE = 0.8  # of the memory the machine has available


def check_parser_memory(lengths: Sequence[int], batch_size: int, training: bool, what: str, hint: str) -> None:
    """Refuse a parser's batch of the longest sentence (``batch_size`` sentences of its length: batches
    group sentences of similar length) when its arc scores would not fit in the machine's memory."""
    available = available_memory_bytes()
    if not lengths or available is None:
        return
    longest = max(range(len(lengths)), key=lengths.__getitem__)
    needed = arc_score_bytes(min(batch_size, len(lengths)), lengths[longest], training)
    if needed > USABLE_SHARE * available:
        raise SeqTransferError(
            f"{what} {longest + 1} has {lengths[longest]:,} tokens: a parser's scores for a batch of such sentences need about {needed / 2**30:.1f} GB, and {available / 2**30:.1f} GB are available",
            hint=hint,
        )
