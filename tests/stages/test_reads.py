"""Stage files are the durable log, read once per run: a 30-problem run with three refinement rounds."""

from collections import Counter
from itertools import count

from logicpipe.core import stagefile
from logicpipe.stages import RunConfig, run
from logicpipe.testing import FakeOpenAI

BROKEN = "Domain:\n1: leftmost\nVariables:\nx [IN] [1, 2]\nConstraints:\nx >>> {n}\nQuery:\nA) x == 1\n"


def test_each_stage_file_is_read_at_most_once(tmp_path, data_dir, monkeypatch, capsys):
    reads: Counter[str] = Counter()
    real = stagefile._lines_of

    def counted(path):
        reads[path.name] += 1
        return real(path)

    monkeypatch.setattr(stagefile, "_lines_of", counted)
    config = RunConfig(dataset="logicaldeduction", data_dir=data_dir, out=tmp_path, limit=30, model="m",
                       max_rounds=3, llm_cache=tmp_path / "cache.sqlite", max_errors="100%")
    served = count()
    # Every reply is a different broken program, so no round repeats an earlier request.
    with FakeOpenAI(lambda body: BROKEN.format(n=next(served))) as fake:
        config = config.model_copy(update={"base_url": fake.url})
        first = run(config)
        assert len(fake.requests) == 30 * 4  # formulate, then three rounds that never repair anything
        reads.clear()
        again = run(config)
        assert len(fake.requests) == 30 * 4
    with capsys.disabled():
        print(f"\nstage file reads on resume: {dict(sorted(reads.items()))}")
    assert first.metrics["refinement_rounds"] == 3 and first.metrics["failures"] == {"parse": 30}
    expected = {"formulate.jsonl", "solve.jsonl", "interpret.jsonl", "evaluate.jsonl",
                *(f"{stage}-{n}.jsonl" for stage in ("refine", "solve") for n in (1, 2, 3))}
    assert set(reads) == expected and max(reads.values()) == 1
    assert again.file_reads == {name.removesuffix(".jsonl"): 1 for name in expected}
    assert again.metrics == first.metrics
