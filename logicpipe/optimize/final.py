"""The honest score: the start and the best prompt sets run on the test part, which neither the
minibatches nor acceptance ever saw. Run at the end of every optimisation, also one stopped by a spent
budget, Ctrl-C or a failing model, and written to OUT/test.json with the `logicpipe run` command that
reproduces the best prompt set's score."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from ..core.errors import DataError, LogicPipeError
from .calls import Budget
from .config import OptimizeConfig
from .forward import batch_tag, forward
from .params import Structure
from .records import TestScore
from .splits import Splits
from .state import OptimizeState
from .stats import interval, paired

TEST_FILE = "test.json"


class SkipTest(Exception):
    """The test part is not scored this time (the message says why)."""


def run_command(config: OptimizeConfig, splits: Splits, prompts_dir: Path, structure: Structure,
                ids_file: Path) -> str:
    """`logicpipe run` with the options the test evaluation ran with: the same split, problems, model,
    prompts, structure, seed and reply cache (so a re-run sends nothing and gives the same score)."""
    where = ["--task", str(config.task)] if config.task is not None else ["--dataset", config.dataset]
    words = ["logicpipe", "run", *where, "--split", splits.test_split]
    if config.data_dir is not None:
        words += ["--data-dir", str(config.data_dir)]
    words += ["--model", config.model]
    if config.base_url is not None:
        words += ["--base-url", config.base_url]
    words += ["--prompts", str(prompts_dir), *structure.flags().split(), "--seed", str(config.seed),
              "--ids", str(ids_file), "--llm-cache", str(config.cache_path), "--out", str(config.out / "test-run")]
    return shlex.join(words)


def score_test(config: OptimizeConfig, splits: Splits, state: OptimizeState, budget: Budget,
               stopped: str | None, skip: str | None = None) -> TestScore | None:
    """Score start and best on the test part and write OUT/test.json; None when no state was saved yet.
    With `skip` (the model failed for good: asking it again would only fail again), or after a model
    failure or a second Ctrl-C, the record's error says why there is no score."""
    saved = state.current()
    if saved is None:
        return None
    budget.new_step()  # what an interrupted step spent is not the test's
    ids_file = splits.write(config.out)["test"]
    best_structure = saved.best_structure
    record = TestScore(split=splits.test_split, problems=len(splits.test), ids_file=str(ids_file),
                       start_hash=saved.start_hash, best_hash=saved.best_hash,
                       best_structure=best_structure.model_dump(), stopped=stopped,
                       command=run_command(config, splits, state.prompts_dir(saved.best_hash), best_structure,
                                           ids_file))
    tag = batch_tag("test", splits.test)
    interrupted: KeyboardInterrupt | None = None
    budget.bounded = False
    try:
        if skip is not None:
            raise SkipTest(skip)
        scores = []
        for params_hash, structure in ((saved.start_hash, Structure()), (saved.best_hash, best_structure)):
            traces = forward(config, state.prompts_dir(params_hash), params_hash, structure, splits.test_split,
                             splits.test, tag, budget)
            correct = {t.outcome.id: float(t.outcome.correct) for t in traces}
            scores.append([correct.get(pid, 0.0) for pid in splits.test])
        comparison = paired(scores[1], scores[0])
        record = record.model_copy(update={"start": sum(scores[0]) / len(scores[0]),
                                           "best": sum(scores[1]) / len(scores[1]), "paired": comparison,
                                           "interval": interval(comparison)})
    except (LogicPipeError, SkipTest) as exc:
        record = record.model_copy(update={"error": str(exc)})
    except KeyboardInterrupt as exc:
        record = record.model_copy(update={"error": "interrupted (Ctrl-C) before the test part was scored"})
        interrupted = exc
    finally:
        budget.bounded = True
    spend = budget.new_step()
    record = record.model_copy(update={"calls": spend.calls, "cached_calls": spend.cached_calls, "sent": spend.sent,
                                       "prompt_tokens": spend.prompt_tokens,
                                       "completion_tokens": spend.completion_tokens})
    path = config.out / TEST_FILE
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    if interrupted is not None:
        raise interrupted
    return record


def read_test(folder: Path) -> TestScore | None:
    path = folder / TEST_FILE
    if not path.is_file():
        return None
    try:
        return TestScore.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(f"{path}: not a test score ({str(exc).splitlines()[0]})") from None
