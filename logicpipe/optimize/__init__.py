"""Prompt (and structure) optimisation: a forward run, a judge's loss, textual gradients, rewrites of
prompt components, and acceptance judged on held-out validation problems."""

from .config import OptimizeConfig
from .loop import OptimizeResult, optimize
from .params import (
           PromptComponents,
           PromptParams,
           Structure,
           check_candidate,
           check_demonstrations,
           split_template,
)
from .records import CandidateRecord, GradientRecord, LossRecord, Paired, ProblemOutcome, StepRecord
from .report import write_report
from .state import OptimizeState, SavedState
from .stats import accept, paired

__all__ = ["CandidateRecord", "GradientRecord", "LossRecord", "OptimizeConfig", "OptimizeResult", "OptimizeState",
           "Paired", "ProblemOutcome", "PromptComponents", "PromptParams", "SavedState", "StepRecord", "Structure",
           "accept", "check_candidate", "check_demonstrations", "optimize", "paired", "split_template", "write_report"]
