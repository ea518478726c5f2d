"""Transfer schemes: which parameters come from a source run, which train, when."""
