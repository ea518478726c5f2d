"""Experiments: grids of runs that reproduce the papers' tables, their results store and reports."""
