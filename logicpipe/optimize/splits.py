"""Which problems train the prompts and which judge them. The test split is never loaded; a dataset
without a train split has its validation split cut in two by a hash of each id."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from ..core.errors import DataError
from ..data import load_problems
from .config import OptimizeConfig

# The share of a split that trains when the dataset has no train split of its own.
TRAIN_SHARE = 0.5


@dataclass(frozen=True)
class Splits:
    train_split: str  # the dataset split the training problems come from
    val_split: str
    train: list[str]  # problem ids, in the split's order
    val: list[str]
    carved: bool  # True when train and val are two parts of one split (no train split exists)
    asked: str = "train"  # the train split the user asked for
    val_total: int = 0  # validation problems before --limit-val

    @property
    def note(self) -> str:
        if self.carved:
            why = (f"--train-split and --val-split are both {self.val_split}" if self.asked == self.val_split
                   else f"no '{self.asked}' split")
            return (f"{why}: {self.val_split} was split by sha256 of each id into "
                    f"{len(self.train)} training and {max(self.val_total, len(self.val))} validation problems"
                    + (f", of which --limit-val keeps {len(self.val)}" if self._limited else ""))
        kept = f", of which --limit-val keeps {len(self.val)}" if self._limited else ""
        return (f"training on {self.train_split} ({len(self.train)}), validating on {self.val_split} "
                f"({max(self.val_total, len(self.val))}{kept})")

    @property
    def _limited(self) -> bool:
        return self.val_total > len(self.val)

    def as_dict(self) -> dict:
        return {"train_split": self.train_split, "val_split": self.val_split, "carved": self.carved,
                "train": len(self.train), "val": len(self.val), "note": self.note}


def _trains(problem_id: str) -> bool:
    digest = hashlib.sha256(problem_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < TRAIN_SHARE


def make_splits(config: OptimizeConfig) -> Splits:
    spec = config.spec
    val_problems = [p.id for p in load_problems(spec, config.val_split, config.data_dir)]
    carved = config.train_split not in spec.splits or config.train_split == config.val_split
    if carved:
        train = [pid for pid in val_problems if _trains(pid)]
        val = [pid for pid in val_problems if not _trains(pid)]
        train_split = config.val_split
    else:
        train = [p.id for p in load_problems(spec, config.train_split, config.data_dir)]
        val = val_problems
        train_split = config.train_split
    val_total = len(val)
    if config.limit_val is not None:
        val = val[: config.limit_val]
    # Rollback is judged on held-out problems only: one shared id would let a minibatch vote on itself.
    assert not set(train) & set(val), "training and validation problems overlap"
    if not train or len(val) < 2:
        raise DataError(f"{spec.key}: {len(train)} training and {len(val)} validation problems; "
                        "need at least one and two")
    return Splits(train_split, config.val_split, train, val, carved, config.train_split, val_total)


def minibatch(splits: Splits, step: int, size: int, seed: int) -> list[str]:
    """The training ids of one step: the same for the same seed and step, so a resumed step redoes the
    same batch (and its model calls come from the cache)."""
    chosen = random.Random(f"{seed}:{step}").sample(splits.train, min(size, len(splits.train)))
    order = {pid: index for index, pid in enumerate(splits.train)}
    return sorted(chosen, key=order.__getitem__)
