"""Scores in Logic-LM's terms (Exe_Rate, Exe_Acc), on our definition and on the paper's, plus accuracy
with the backup answer, refinement and token figures."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..core import stats
from ..core.records import ErrorCategory, EvaluateRecord, Usage, executed
from ..core.trajectory import Trajectory
from ..data.logicbench import group
from ..solvers import solver_rules
from .config import RunConfig

# Logic-LM counts a Z3 program that selects no option as an execution error; for every other solver a
# program that ran to the end counts as executed, whether or not it decided an option.
_NO_ANSWER_IS_UNEXECUTED = {"smt"}


def _percent(part: int, whole: int) -> float | None:
    """A rate in percent; None (null in JSON, `–` in tables) where nothing was counted: Exe_Acc when no
    program executed is undefined, not 0."""
    return round(100.0 * part / whole, 2) if whole else None


class Tally:
    """The run's figures, added up chunk by chunk while a run streams (nothing per problem is kept)."""

    def __init__(self, solver: str):
        self.solver = solver
        self.total = self.executed = self.correct_executed = self.correct = 0
        self.paper_executed = self.paper_correct = 0
        self.failures: Counter[str] = Counter()
        self.sources: set[str] = set()
        self.rounds = 0
        self.first = self.first_executed = 0  # round-0 solve records, and those that executed
        self.usage: Usage | None = None
        self.decisions: Counter[str] = Counter()
        self.decided = self.revised = 0
        # Executed programs that needed a named leniency: per rule, any rule, and a rule Logic-LM's parser lacks.
        self.lenient: Counter[str] = Counter()
        self.lenient_programs = self.beyond_logic_lm = 0
        # LogicBench: [total, executed, correct_executed, correct] per `<logic>/<pattern>` of the ids.
        self.groups: dict[str, list[int]] = {}

    def scores(self, records: Iterable[EvaluateRecord]) -> Tally:
        for r in records:
            self.total += 1
            self.correct += r.correct
            named = group(r.id)
            if named is not None:
                counts = self.groups.setdefault(named, [0, 0, 0, 0])
                counts[0] += 1
                counts[1] += r.executed
                counts[2] += r.correct_executed
                counts[3] += r.correct
            if r.error is not None:
                self.failures[r.error.category.value] += 1
            if not r.executed:
                continue
            self.executed += 1
            self.correct_executed += r.correct_executed
            if not (self.solver in _NO_ANSWER_IS_UNEXECUTED and r.error is not None
                    and r.error.category == ErrorCategory.no_answer):
                self.paper_executed += 1
                self.paper_correct += r.correct_executed
        return self

    def trajectories(self, trajectories: Iterable[Trajectory]) -> Tally:
        beyond = {name for name, rule in solver_rules(self.solver).items() if not rule.logic_lm}
        for t in trajectories:
            if t.formulated is not None:
                self.sources.add(t.formulated.source)
            self.rounds = max(self.rounds, t.rounds())
            if 0 in t.solved:
                self.first += 1
                self.first_executed += executed(t.solved[0].error)
            final = t.latest_solve()
            if final is not None and final.lenient and executed(final.error):
                self.lenient.update(final.lenient.keys())
                self.lenient_programs += 1
                self.beyond_logic_lm += not beyond.isdisjoint(final.lenient)
            usage = t.usage()
            if usage is not None:
                self.usage = usage if self.usage is None else self.usage + usage
            for decision in t.decided.values():
                self.decided += 1
                self.revised += decision.revised
                self.decisions[decision.outcome] += 1
        return self

    _COUNTS = ("total", "executed", "correct_executed", "correct", "paper_executed", "paper_correct",
               "first", "first_executed", "decided", "revised", "lenient_programs", "beyond_logic_lm")

    def state(self) -> dict:
        """The tally as JSON, saved with each finished chunk (a resume adds it instead of re-reading)."""
        return {**{name: getattr(self, name) for name in self._COUNTS}, "rounds": self.rounds,
                "failures": dict(self.failures), "sources": sorted(self.sources),
                "decisions": dict(self.decisions), "usage": self.usage.model_dump() if self.usage else None,
                "lenient": dict(self.lenient),
                **({"groups": self.groups} if self.groups else {})}

    def add(self, state: dict) -> Tally:
        """Another tally's state added to this one."""
        for name in self._COUNTS:
            setattr(self, name, getattr(self, name) + state.get(name, 0))  # a chunk saved before a count existed
        self.lenient.update(state.get("lenient", {}))
        self.rounds = max(self.rounds, state["rounds"])
        self.failures.update(state["failures"])
        self.sources.update(state["sources"])
        self.decisions.update(state["decisions"])
        for named, counts in state.get("groups", {}).items():
            mine = self.groups.setdefault(named, [0, 0, 0, 0])
            self.groups[named] = [a + b for a, b in zip(mine, counts)]
        if state["usage"] is not None:
            usage = Usage(**state["usage"])
            self.usage = usage if self.usage is None else self.usage + usage
        return self

    def score_metrics(self, config: RunConfig) -> dict:
        return {
            "dataset": config.spec.key,
            "split": config.split,
            "source": f"replay:{config.programs.name}" if config.programs else f"llm:{config.model}",
            "total": self.total,
            "executed": self.executed,
            "exe_rate": _percent(self.executed, self.total),
            "exe_acc": _percent(self.correct_executed, self.executed),
            "exe_rate_logiclm": _percent(self.paper_executed, self.total),
            "exe_acc_logiclm": _percent(self.paper_correct, self.paper_executed),
            "correct": self.correct,
            "accuracy": _percent(self.correct, self.total),
            "failures": dict(sorted(self.failures.items())),
            # Executed programs that needed a named leniency (docs/tasks.md), and those that needed one Logic-LM's
            # own parser lacks: Exe_Rate on Logic-LM's grammar is (executed - beyond_logic_lm) / total, or --strict.
            "lenient": {"programs": self.lenient_programs, "beyond_logic_lm": self.beyond_logic_lm,
                        "rules": dict(sorted(self.lenient.items()))},
            "backup": config.backup,
            "seed": config.seed,
        }

    def model_metrics(self, config: RunConfig) -> dict:
        """Exe_Rate before refinement and the tokens every model call of this run used (from the records,
        so the figures are the same however often the run was resumed)."""
        extra: dict = {}
        # The formulate records say where the programs came from, also when evaluate runs on its own.
        if len(self.sources) == 1:
            extra["source"] = next(iter(self.sources))
        if self.rounds:
            extra["exe_rate_before_refinement"] = _percent(self.first_executed, self.first)
            extra["refinement_rounds"] = self.rounds
        if self.decided:  # --refine semantic: how many revisions were judged, and how many replaced a program
            extra["revisions"] = {"decided": self.decided, "revised": self.revised,
                                  **dict(sorted(self.decisions.items()))}
        if self.usage is not None:
            tokens = self.usage
            extra["tokens"] = tokens.model_dump()
            if config.price_prompt is not None or config.price_completion is not None:
                cost = (tokens.prompt_tokens * (config.price_prompt or 0)
                        + tokens.completion_tokens * (config.price_completion or 0)) / 1e6
                extra["cost"] = round(cost, 6)
                # None where nothing was counted (no problem; no correct answer): undefined, not free.
                extra["cost_per_problem"] = round(cost / self.total, 8) if self.total else None
                extra["cost_per_correct"] = round(cost / self.correct, 8) if self.correct else None
                if config.batch or config.batch_export is not None:  # the replies came through batches
                    extra["batch_cost"] = round(cost * config.batch_discount, 6)
        return extra

    def metrics(self, config: RunConfig) -> dict:
        return {**self.score_metrics(config), **self.intervals(), **self.model_metrics(config),
                **self.group_metrics(config)}

    def intervals(self) -> dict:
        """The 95% interval (percent) of each rate, and the n of Logic-LM's Exe_Acc (the others' are
        total and executed). None where the rate is undefined."""
        return {**_intervals([self.total, self.executed, self.correct_executed, self.correct]),
                "executed_logiclm": self.paper_executed,
                "exe_rate_logiclm_ci": stats.percent(stats.wilson(self.paper_executed, self.total)),
                "exe_acc_logiclm_ci": stats.percent(stats.ratio_interval(self.paper_correct, self.paper_executed,
                                                                         self.total))}

    def group_metrics(self, config: RunConfig) -> dict:
        """LogicBench: the scores per logic type (`by_logic`) and per pattern (`by_pattern`), by the ids'
        `<logic>/<pattern>/...` prefix; nothing for another dataset."""
        if config.spec.source.format != "logicbench" or not self.groups:
            return {}
        logics: dict[str, list[int]] = {}
        for named, counts in self.groups.items():
            logic = named.split("/")[0]
            logics[logic] = [a + b for a, b in zip(logics.get(logic, [0, 0, 0, 0]), counts)]
        return {"subset": config.subset, "by_logic": {k: {**_scores(v), **_intervals(v)} for k, v in sorted(logics.items())},
                "by_pattern": {k: {**_scores(v), **_intervals(v)} for k, v in sorted(self.groups.items())}}


def _scores(counts: list[int]) -> dict:
    total, executed, correct_executed, correct = counts
    return {"total": total, "executed": executed, "exe_rate": _percent(executed, total),
            "exe_acc": _percent(correct_executed, executed), "correct": correct, "accuracy": _percent(correct, total)}



def _intervals(counts: list[int]) -> dict:
    """Wilson's interval for accuracy and Exe_Rate (proportions of all problems), a seeded bootstrap for
    Exe_Acc, whose denominator (the executed problems) is itself drawn."""
    total, executed, correct_executed, correct = counts
    return {"accuracy_ci": stats.percent(stats.wilson(correct, total)),
            "exe_rate_ci": stats.percent(stats.wilson(executed, total)),
            "exe_acc_ci": stats.percent(stats.ratio_interval(correct_executed, executed, total))}
