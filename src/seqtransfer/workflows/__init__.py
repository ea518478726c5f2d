"""Run-level workflows: jobs made of several trainings or of a training and its data (language-model
pretraining, dataset unification, self-labelling, pseudo-labels, ensembles). They sit above
``training`` and ``transfer`` and below ``experiments``, ``analysis`` and the commands."""
