"""Data layer: readers/writers (conll, conllu), the dataset registry, locating and loading splits."""
