"""seqtransfer: neural transfer learning for sequence labelling, from news to social media.

import seqtransfer
tagger = seqtransfer.load("runs/wnut17")
tagger.predict([["I", "love", "NYC"]])
"""

from seqtransfer.errors import SeqTransferError

__version__ = "0.1.0"
__all__ = ["SeqTransferError", "load", "__version__"]


def load(run_directory, tokenizer: str = "whitespace", device: str = "auto", batch_size: int = 256, transliterate: str | None = None, amp: str = "off"):
    """Load a saved run directory onto ``device`` (auto: the first GPU, else the CPU) and return
    a predictor (see :mod:`seqtransfer.predictor`); ``transliterate="sr"`` reads Serbian Cyrillic
    input as Latin script; ``amp="bf16"`` runs a fine-tuned encoder in bf16 (faster on a CPU with
    bf16 instructions; a few predictions may differ from fp32's)."""
    from seqtransfer.predictor import load as load_predictor  # torch is imported only when needed

    return load_predictor(run_directory, tokenizer, device, batch_size, transliterate, amp)
