"""A bank as people look at it: counts, sessions, a memory's surroundings, entities, LLM usage (the SQL in
queries.py, the verbs that check their arguments and run it in verbs.py). Above banks/ and learn/: the counts
read what consolidation has still to do."""
