"""Is a candidate better than the current state? A paired comparison on the same validation problems:
per-problem differences, their mean and standard error, and how many problems each side won."""

from __future__ import annotations

import math

from ..core.errors import UsageError
from .records import Paired


def paired(new: list[float], old: list[float]) -> Paired:
    """Differences new - old, problem by problem (both lists in the same problem order)."""
    if len(new) != len(old):
        raise UsageError(f"paired scores need the same problems ({len(new)} new, {len(old)} old)")
    differences = [a - b for a, b in zip(new, old, strict=True)]
    n = len(differences)
    if n == 0:
        return Paired(n=0, mean=0.0, se=0.0, wins=0, losses=0)
    mean = sum(differences) / n
    # The sample standard deviation (n - 1); a single problem gives no spread to judge by.
    variance = sum((d - mean) ** 2 for d in differences) / (n - 1) if n > 1 else 0.0
    return Paired(n=n, mean=mean, se=math.sqrt(variance) / math.sqrt(n),
                  wins=sum(d > 0 for d in differences), losses=sum(d < 0 for d in differences))


def accept(result: Paired, z: float = 2.0) -> bool:
    """A candidate replaces the current state when it is better on average by more than z standard
    errors. With no spread at all (se == 0) the gain must come from at least two problems, so that
    a single lucky problem never decides."""
    if result.n == 0 or result.mean <= 0:
        return False
    if result.se == 0:
        return result.wins >= 2
    return result.mean > z * result.se


def describe(result: Paired) -> str:
    """How the report prints a comparison: mean ± se (wins/losses of n)."""
    return f"{result.mean:+.3f} ± {result.se:.3f} ({result.wins} won, {result.losses} lost of {result.n})"


def interval(result: Paired, z: float = 1.96) -> tuple[float, float]:
    """A normal-approximation interval of the mean paired difference (95% at the default z)."""
    return result.mean - z * result.se, result.mean + z * result.se


def decide(accuracy: Paired, saved: Paired, objective: str, z: float = 2.0) -> tuple[bool, str]:
    """Keep a candidate? `accuracy` is new - old score per problem, `saved` old - new tokens per problem
    (positive: the candidate is cheaper). accuracy: keep it when it is better (accept), or as accurate
    on average (mean >= 0) and measurably cheaper; cost: keep it when it is measurably cheaper and not
    measurably worse. "Measurably" is accept()'s test, with the same z. Also says why."""
    better, cheaper = accept(accuracy, z), accept(saved, z)
    worse = accept(Paired(n=accuracy.n, mean=-accuracy.mean, se=accuracy.se, wins=accuracy.losses,
                          losses=accuracy.wins), z)
    if objective == "cost":
        if cheaper and not worse:
            return True, "measurably fewer tokens and not worse on validation"
        return False, ("worse on validation" if worse else "not measurably fewer tokens on validation")
    if better:
        return True, "better on validation"
    if accuracy.mean >= 0 and cheaper:
        return True, "as accurate on validation at measurably fewer tokens"
    return False, "not better than noise on validation"
