"""Assemble the one self-contained HTML page: inline CSS, JS, SVG and the run's data as JSON."""

from __future__ import annotations

import json
from html import escape
from importlib import resources
from pathlib import Path

from ...core.errors import UsageError
from .charts import failure_chart, rate_chart
from .run import RunView, load_run

_METRICS = [("total", "total"), ("executed", "executed"), ("Exe_Rate", "exe_rate"), ("Exe_Acc", "exe_acc"),
            ("accuracy", "accuracy"), ("cost", "cost"), ("cost per correct", "cost_per_correct"), ("backup", "backup"),
            ("source", "source"), ("split", "split")]


# Problems a page embeds per dataset unless asked otherwise: keeps the page of a large run small and quick.
LIMIT = 1000


def render_html(view: RunView) -> str:
    return _TEMPLATE.format(
        shown=_shown(view),
        title=escape(f"logicpipe: {view.path.name or view.path}"),
        heading=escape(str(view.path)),
        css=_asset("viewer.css"),
        js=_asset("viewer.js"),
        metrics=_metrics_table(view.datasets),
        charts=rate_chart(view.datasets) + failure_chart(view.datasets),
        warnings="".join(f"<li>{escape(w)}</li>" for w in view.warnings),
        data=_script_json({"problems": view.problems}),
    )


def write_html(run_dir: Path, out: Path | None = None, data_dir: Path | str | None = None,
               task: Path | None = None, limit: int = LIMIT, offset: int = 0) -> Path:
    """Write RUN's page (default RUN/report.html) and return its path: problems `offset` to
    `offset + limit` of each dataset in run order (limit 0: all of them)."""
    target = out or run_dir / "report.html"
    window = slice(offset, offset + limit if limit else None)
    view = load_run(run_dir, data_dir, task=task, window=window)
    if offset and view.datasets and not any(entry["shown"] for entry in view.datasets):
        # A page of no problems would replace the one already there: refused before anything is written.
        sizes = ", ".join(f"{entry['key']} has {entry['problems']:,}" for entry in view.datasets)
        raise UsageError(f"--offset {offset} is past the end of the run ({sizes} problems); give an offset "
                         f"below that, or none ({target} is left as it was)")
    html = render_html(view)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(html, encoding="utf-8")
    return target


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _script_json(value: object) -> str:
    """JSON that cannot end its <script> element: model-written text may hold '</script>' or '<!--'."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _shown(view: RunView) -> str:
    """Which problems the page holds, where it does not hold them all, and how to see the others."""
    notes = []
    for entry in view.datasets:
        first, shown, total = entry["first"], entry["shown"], entry["problems"]
        if shown == total:
            continue
        span = f"problems {first + 1:,} to {first + shown:,}" if shown else "no problems"
        notes.append(f"<li>{escape(entry['key'])}: {span} of {total:,} (in run order); the metrics and charts "
                     f"cover all {total:,}. See others with <code>logicpipe view {escape(str(view.path))} "
                     f"--offset {first + shown} --limit N</code>, all with <code>--limit 0</code>.</li>")
    return f'<ul class="shown">{"".join(notes)}</ul>' if notes else ""


def _money(value: object) -> str | None:
    return f"${value:.6g}" if isinstance(value, (int, float)) else None


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, dict):
        return escape(", ".join(f"{k}: {v}" for k, v in value.items()) or "none")
    return escape("–" if value is None else str(value))  # undefined (or not recorded), never 0


# The count each rate is of: shown beside it with its 95% interval (metrics.json's `<rate>_ci`).
_N = {"exe_rate": "total", "exe_acc": "executed", "accuracy": "total"}


def _rate(metrics: dict, key: str) -> str:
    value, n, interval = metrics.get(key), metrics.get(_N[key]), metrics.get(f"{key}_ci")
    if not isinstance(value, (int, float)) or not n:
        return "–"  # undefined (nothing to divide by) is not zero
    shown = f' <span class="ci">[{interval[0]:.2f}, {interval[1]:.2f}]</span>' if interval else ""
    return f'{value:.2f}{shown} <span class="n">n={n}</span>'


def _metrics_table(datasets: list[dict]) -> str:
    if not datasets:
        return "<p>No dataset directories in this run.</p>"
    head = "".join(f"<th>{escape(label)}</th>" for label, _ in [("dataset", ""), *_METRICS, ("failures", "")])
    rows = []
    for entry in datasets:
        metrics = entry["metrics"]
        cells = [escape(entry["key"]), *(_rate(metrics, key) if key in _N else _cell(_money(metrics.get(key)))
                                         if key.startswith("cost") else _cell(metrics.get(key)) for _, key in _METRICS),
                 _cell(metrics.get("failures", {}))]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return (f'<table class="metrics"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            + _gold_agreement(datasets) + _faithfulness(datasets) + _groups(datasets))


_GROUP_COLUMNS = [("total", "total"), ("executed", "executed"), ("Exe_Rate", "exe_rate"), ("Exe_Acc", "exe_acc"),
                  ("accuracy", "accuracy")]


def _groups(datasets: list[dict]) -> str:
    """LogicBench: a table per dataset of its figures per logic type, then per pattern (metrics.json's
    by_logic and by_pattern)."""
    tables = []
    head = "".join(f"<th>{escape(label)}</th>" for label, _ in [("logic type / pattern", ""), *_GROUP_COLUMNS])
    for entry in datasets:
        metrics = entry["metrics"]
        groups = {**(metrics.get("by_logic") or {}), **(metrics.get("by_pattern") or {})}
        if not groups:
            continue
        rows = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in [_cell(name), *(_rate(row, k) if k in _N else _cell(row.get(k))
                                                                                  for _, k in _GROUP_COLUMNS)])
                       + "</tr>" for name, row in groups.items() if isinstance(row, dict))
        tables.append(f'<table class="metrics groups"><caption>{escape(entry["key"])} by logic type and pattern'
                      f'</caption><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>')
    return "".join(tables)


def _gold_agreement(datasets: list[dict]) -> str:
    """A line per dataset held against its gold programs (metrics.json's gold_agreement)."""
    lines = []
    for entry in datasets:
        held = entry["metrics"].get("gold_agreement")
        if not isinstance(held, dict):
            continue
        if "error" in held:
            lines.append(f"<li>{escape(entry['key'])}: {escape(str(held['error']))}</li>")
            continue
        premises = held.get("premises") if isinstance(held.get("premises"), dict) else {}
        checked = (f"; the run's premises give the label for the gold conclusion on {_cell(premises.get('give_label'))} "
                   f"of {_cell(premises.get('checked'))} problems whose names match") if premises else ""
        lines.append(f"<li>{escape(entry['key'])}: the run's verdict agrees with the gold program's on "
                     f"{_cell(held.get('agree'))} of {_cell(held.get('compared'))} problems where both proved an "
                     f"option ({_cell(held.get('rate'))}%){checked}</li>")
    return f'<ul class="gold-agreement">{"".join(lines)}</ul>' if lines else ""


def _faithfulness(datasets: list[dict]) -> str:
    """A line per dataset whose translations were held against gold formulas (`logicpipe faithfulness`)."""
    def shown(value: object) -> str:
        return "–" if value is None else _cell(value)

    lines = []
    for entry in datasets:
        held = entry["metrics"].get("faithfulness")
        if not isinstance(held, dict):
            continue
        said = []
        for name, key in (("premise recall", "premise_recall"), ("premise precision", "premise_precision"),
                          ("conclusion equivalent", "conclusion_equivalent"),
                          ("translation equivalent", "translation_equivalent")):
            value = held.get(key)
            figure: dict = value if isinstance(value, dict) else {}
            said.append(f"{name} {shown(figure.get('rate'))}% ({shown(figure.get('yes'))} yes, "
                        f"{shown(figure.get('no'))} no, {shown(figure.get('unknown'))} unknown)")
        lines.append(f"<li>{escape(entry['key'])}, {shown(held.get('scored'))} programs held against gold formulas: "
                     f"{'; '.join(said)}; right for the wrong reason: {shown(held.get('right_for_wrong_reason'))}; "
                     f"LogicLLaMA's LE {shown(held.get('le'))}, BLEU {shown(held.get('bleu'))}</li>")
    return f'<ul class="faithfulness">{"".join(lines)}</ul>' if lines else ""


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<header><h1>logicpipe run</h1><p class="path">{heading}</p></header>
<ul class="warnings">{warnings}</ul>
<section id="metrics"><h2>Metrics</h2>{metrics}<div class="charts">{charts}</div></section>
<section id="problems"><h2>Problems</h2>
{shown}
<form id="filters">
<label>dataset <select id="f-dataset"></select></label>
<label>outcome <select id="f-outcome"><option value="">all</option><option value="correct">correct</option><option value="wrong">wrong</option></select></label>
<label>error <select id="f-category"></select></label>
<label>refinement rounds <select id="f-rounds"></select></label>
<label>search <input id="f-search" type="search" placeholder="id or message"></label>
<span id="count"></span>
</form>
<div class="split">
<div class="table-wrap"><table id="problem-table"><thead><tr><th>dataset</th><th>id</th><th>gold</th><th>predicted</th><th>final</th><th>correct</th><th>error</th><th>rounds</th><th>message</th></tr></thead><tbody></tbody></table></div>
<div id="detail"><p class="hint">Select a problem to see its program, refinements and the solver's explanation.</p></div>
</div>
</section>
<script id="run-data" type="application/json">{data}</script>
<script>{js}</script>
</body>
</html>
"""
