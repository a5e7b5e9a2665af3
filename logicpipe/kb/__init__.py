"""Knowledge-base mode (ProSLM): prove goals against a trusted Prolog KB with goal trees, gather context
for a model's answer (ask), and validate a model's answer claim by claim (validate).

- terms.py / safety.py: model-written goals are parsed here and whitelisted, never consulted.
- prolog.py / engine.pl: one isolated, long-lived swipl per KB; a meta-interpreter builds goal trees.
- knowledge.py: KnowledgeBase (load, check, prove, percepts); render.py: text, DOT, Mermaid, context.
- check.py / check.pl: `kb check`, SWI-Prolog's own checks in a bounded swipl of their own.
- add.py / facts.pl: `kb add` and `kb retract`, facts judged by SWI-Prolog, a diff, a confirmed write.
- flow.py, ask.py, validate.py: the model-backed modes; batch.py runs them on a RunFolder.
- outcome.py: the three verdicts (proved, failed, unknown) of a prove result.
- gold.py: statements labelled by the KB itself, for scripts/benchmark_kb.py.
"""
