"""Prompt (and structure) optimisation: a forward run, a judge's loss, textual gradients, rewrites of
prompt components, and acceptance judged on held-out validation problems."""

from .records import CandidateRecord, GradientRecord, LossRecord, Paired, ProblemOutcome, StepRecord

__all__ = ["CandidateRecord", "GradientRecord", "LossRecord", "Paired", "ProblemOutcome", "StepRecord"]
