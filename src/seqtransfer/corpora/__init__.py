"""Corpora as a run reads them, above the task kinds: a dataset read for one task (task_data), the
training split as the options shape it (selection), source and target sentences mixed by data
annealing (annealing), and unlabelled text (unlabeled).

They sit above ``tasks/`` because a task kind decides how a dataset's annotation is read and
checked, and the kinds themselves build on ``data/`` (label encoding, writers, trees, schemes).
"""
