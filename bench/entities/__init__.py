"""Precision and recall of memwrap's entity extraction on a labelled sample of its own (`python -m bench.entities`)."""
