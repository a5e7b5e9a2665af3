"""Faithfulness: a FOL run's translations held against a dataset's gold formulas (report.py), with the
alignment (align.py), the bounded checks (logic.py), the per-program worker (score.py) and LogicLLaMA's
string scores (strings.py)."""

from .report import Excluded, Report, Scored, as_json, faithfulness, totals, write

__all__ = ["Excluded", "Report", "Scored", "as_json", "faithfulness", "totals", "write"]
