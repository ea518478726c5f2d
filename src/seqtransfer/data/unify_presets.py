"""The built-in task -> dataset mappings of `seqtransfer unify` (MuTSPad, section 4.2.2).

Torch-free, so that `seqtransfer --help` can list them without importing torch.
"""

PRESETS = {
    "tweetall": {"POS": "tweebank:upos", "CK": "tchunk:chunk", "NER": "wnut17:ner", "DP": "tweebank:dependency"},
    "englishall": {"POS": "conll2000+ptb_sample:pos", "CK": "conll2000:chunk", "NER": "conll2003:ner", "DP": "ud_ewt:dependency"},
}
