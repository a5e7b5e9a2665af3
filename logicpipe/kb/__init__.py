"""Knowledge-base mode (ProSLM): prove goals against a trusted Prolog KB with goal trees, gather context
for a model's answer (ask), and validate a model's answer claim by claim (validate).

- terms.py / safety.py: model-written goals are parsed here and whitelisted, never consulted.
- prolog.py / engine.pl: one isolated, long-lived swipl per KB; a meta-interpreter builds goal trees.
- base.py: KnowledgeBase (load, check, prove, percepts); render.py: text, DOT, Mermaid, context.
- flow.py, ask.py, validate.py, add.py: the model-backed modes, batch-first and resumable.
- gold.py: statements labelled by the KB itself, for scripts/benchmark_kb.py.
"""
