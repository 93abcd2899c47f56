"""Reflect, the third verb: an LLM agent answers a question from a bank's memory with native function calling.

service.py   Engine.reflect: checks, disposition (settings < bank < call), limits → agent
agent.py     the loop, the budget split among a turn's tool calls, the forced synthesis, the result
tools.py     search_mental_models, search_observations (with staleness), recall, expand — each within its cap
output.py    the `done` tool and structured output (`response_schema`)
budget.py    token counting of requests and the limits (tokens, iterations, clock)
prompts.py   the system prompts and the disposition's wording
refs.py      short references (M1, O2, F3) and the record of what was gathered
cite.py      cited references → ids that exist in the bank
queries.py   read-only SQL the verbs above do not cover
"""
