"""Explaining what transfer did (PretRand paper §4.1, §4.2, §7.1, §7.2.5, §7.2.6).

predictions.py        read a run's ``predictions/<split>.conll`` (token, gold, predicted)
mistakes.py           mistake types of falsified tokens (capitalised, contraction, ...)
negative_transfer.py  positive / negative transfer and gain between two runs (equations 3-5)
activations.py        read back the dev activations training/activations.py recorded
neurons.py            unit charge (equation 6) and top-k words firing each unit over epochs
curves.py             (training-set size, score) points of runs for Figure 13
figures.py            matplotlib figures (PNG + SVG) of all of the above
html.py               one self-contained HTML report
"""
