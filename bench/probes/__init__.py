"""Latency probes contributed by other parts of memwrap.

Every module in this package is imported by the benchmark before the latency run, so a module only has to
register its probe. A probe runs once per bank size with a `ProbeContext` (the `Memory`, a bank of that size,
fresh queries, repetitions/warm-up settings) and returns a `ProbeResult` of per-repetition samples in ms:

    # bench/probes/wrapper_overhead.py
    from bench.latency import ProbeContext, ProbeResult, register_probe, time_calls

    @register_probe("wrapper_overhead", "wrapper overhead per chat call", order=50)
    def probe(ctx: ProbeContext) -> ProbeResult:
        client = ...  # a wrapped fake LLM client on ctx.memory / ctx.bank_id
        result = time_calls(ctx, lambda query: client.chat.completions.create(...))
        result.note = "what was timed, exactly"
        return result

Names listed in `bench.latency.PLANNED_PROBES` ("wrapper_overhead", "mental_model_read") show up in the
report as "not measured" until a probe with that name is registered here. Return
`ProbeResult(skipped="why")` rather than numbers you did not measure.
"""
