"""Which problems train the prompts, which judge them, and which are kept back to score the result.

Three parts, always, and never overlapping:
- train: the minibatches (the --train-split, or a part of the --val-split where the dataset has none);
- validation: decides every step's acceptance, so its best score is optimistic (it was chosen on it);
- test: seen by neither training nor acceptance; the start and best prompt sets are scored on it once,
  at the end. A whole --test-split, or else a part of the --val-split.

A split that has to be cut is cut by sha256 of each id (with a fixed salt), so the cut is the same on
every machine and every run; the ids of each part are written to OUT/splits/<part>.txt, where
`logicpipe run --ids` and `--exclude-ids` read them.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import DataError
from ..data import load_problems
from .config import OptimizeConfig

# How a split is cut, by the position of an id's hash in [0, 1). Without a train split: 40% train,
# 30% validation, 30% test; with one, the validation split is halved into validation and test.
THREE_WAY = (0.4, 0.7)
TWO_WAY = 0.5
SALT = "logicpipe-optimize-split-v2"
PARTS = ("train", "val", "test")


@dataclass(frozen=True)
class Splits:
    train_split: str  # the dataset split the training problems come from
    val_split: str
    train: list[str]  # problem ids, in the split's order
    val: list[str]
    carved: bool  # True when train and val are two parts of one split (no train split exists)
    asked: str = "train"  # the train split the user asked for
    val_total: int = 0  # validation problems before --limit-val
    test_split: str = ""  # the dataset split the test problems come from
    test: list[str] = field(default_factory=list)
    test_total: int = 0  # test problems before --limit-test

    @property
    def note(self) -> str:
        if self.carved:
            why = (f"--train-split and --val-split are both {self.val_split}" if self.asked == self.val_split
                   else f"no '{self.asked}' split")
            text = (f"{why}: {self.val_split} was split by sha256 of each id into "
                    f"{len(self.train)} training and {max(self.val_total, len(self.val))} validation problems"
                    + (f", of which --limit-val keeps {len(self.val)}" if self._limited else ""))
        else:
            kept = f", of which --limit-val keeps {len(self.val)}" if self._limited else ""
            text = (f"training on {self.train_split} ({len(self.train)}), validating on {self.val_split} "
                    f"({max(self.val_total, len(self.val))}{kept})")
        return text + f"; {self.test_note}"

    @property
    def test_note(self) -> str:
        where = (f"the rest of {self.test_split}" if self.test_split == self.val_split
                 else f"{self.test_split}")
        kept = f", of which --limit-test keeps {len(self.test)}" if self.test_total > len(self.test) else ""
        return f"testing on {where} ({max(self.test_total, len(self.test))}{kept}), never seen while optimising"

    @property
    def _limited(self) -> bool:
        return self.val_total > len(self.val)

    def as_dict(self) -> dict:
        return {"train_split": self.train_split, "val_split": self.val_split, "test_split": self.test_split,
                "carved": self.carved, "train": len(self.train), "val": len(self.val), "test": len(self.test),
                "cut": {"salt": SALT, "three_way": list(THREE_WAY), "two_way": TWO_WAY}, "note": self.note}

    def write(self, folder: Path) -> dict[str, Path]:
        """OUT/splits/<part>.txt, one id a line (what `logicpipe run --ids FILE` reads)."""
        where = folder / "splits"
        where.mkdir(parents=True, exist_ok=True)
        paths = {}
        for part in PARTS:
            path = where / f"{part}.txt"
            text = "".join(f"{pid}\n" for pid in getattr(self, part))
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                tmp = path.with_name(f".{path.name}.tmp")
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(path)
            paths[part] = path
        return paths


def position(problem_id: str) -> float:
    """Where an id falls in [0, 1): the same on every machine and every run."""
    digest = hashlib.sha256(f"{SALT}\x1f{problem_id}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def make_splits(config: OptimizeConfig) -> Splits:
    spec = config.spec
    val_problems = [p.id for p in load_problems(spec, config.val_split, config.data_dir)]
    carved = config.train_split not in spec.splits or config.train_split == config.val_split
    own_test = config.test_split is not None
    if carved:
        # No train split: the validation split gives all three parts (or two, with a --test-split).
        low, high = (TWO_WAY, 1.0) if own_test else THREE_WAY
        train = [pid for pid in val_problems if position(pid) < low]
        val = [pid for pid in val_problems if low <= position(pid) < high]
        rest = [pid for pid in val_problems if position(pid) >= high]
        train_split = config.val_split
    else:
        train = [p.id for p in load_problems(spec, config.train_split, config.data_dir)]
        cut = 1.0 if own_test else TWO_WAY
        val = [pid for pid in val_problems if position(pid) < cut]
        rest = [pid for pid in val_problems if position(pid) >= cut]
        train_split = config.train_split
    if own_test:
        assert config.test_split is not None
        test_split = config.test_split
        test = [p.id for p in load_problems(spec, test_split, config.data_dir)]
    else:
        test_split, test = config.val_split, rest
    val_total, test_total = len(val), len(test)
    if config.limit_val is not None:
        val = val[: config.limit_val]
    if config.limit_test is not None:
        test = test[: config.limit_test]
    # Rollback is judged on held-out problems only: one shared id would let a minibatch vote on itself;
    # and the test problems are seen by neither.
    same = [(train_split, set(train)), (config.val_split, set(val)), (test_split, set(test))]
    for index, (split_a, ids_a) in enumerate(same):
        for split_b, ids_b in same[index + 1:]:
            assert split_a != split_b or not ids_a & ids_b, "the train, validation and test parts overlap"
    if not train or len(val) < 2 or not test:
        raise DataError(f"{spec.key}: {len(train)} training, {len(val)} validation and {len(test)} test problems; "
                        "need at least one, two and one")
    return Splits(train_split, config.val_split, train, val, carved, config.train_split, val_total, test_split,
                  test, test_total)


def minibatch(splits: Splits, step: int, size: int, seed: int) -> list[str]:
    """The training ids of one step: the same for the same seed and step, so a resumed step redoes the
    same batch (and its model calls come from the cache)."""
    chosen = random.Random(f"{seed}:{step}").sample(splits.train, min(size, len(splits.train)))
    order = {pid: index for index, pid in enumerate(splits.train)}
    return sorted(chosen, key=order.__getitem__)
