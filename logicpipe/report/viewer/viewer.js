// The run viewer. Every string from the records is model-written or model-derived, so it only ever
// reaches the page through textContent and createElement, never as markup.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("run-data").textContent);
  const problems = data.problems;
  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key === "open") node.open = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const text = (value) => (value === null || value === undefined ? "" : String(value));
  const outcome = (p) => (p.correct === true ? "correct" : p.correct === false ? "wrong" : "");

  function fillSelect(select, values, labels) {
    select.append(el("option", { value: "" }, "all"));
    for (const value of values) select.append(el("option", { value: value }, labels ? labels(value) : value));
  }

  const unique = (values) => Array.from(new Set(values)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  fillSelect($("f-dataset"), unique(problems.map((p) => p.dataset)));
  fillSelect($("f-category"), unique(problems.map((p) => p.category || "none")),
    (c) => (c === "none" ? "none (executed, answered)" : c));
  fillSelect($("f-rounds"), unique(problems.map((p) => p.refinements)).map(String));

  function matches(p) {
    const dataset = $("f-dataset").value, wanted = $("f-outcome").value;
    const category = $("f-category").value, rounds = $("f-rounds").value;
    const search = $("f-search").value.trim().toLowerCase();
    if (dataset && p.dataset !== dataset) return false;
    if (wanted && outcome(p) !== wanted) return false;
    if (category && (p.category || "none") !== category) return false;
    if (rounds && String(p.refinements) !== rounds) return false;
    if (search && !(p.id.toLowerCase().includes(search) || text(p.message).toLowerCase().includes(search))) return false;
    return true;
  }

  let selected = null;

  function renderTable() {
    const body = document.querySelector("#problem-table tbody");
    body.replaceChildren();
    let shown = 0;
    problems.forEach((p, index) => {
      if (!matches(p)) return;
      shown += 1;
      const row = el("tr", { "data-index": String(index), class: outcome(p) + (selected === index ? " selected" : "") },
        el("td", null, p.dataset), el("td", { class: "id" }, p.id), el("td", null, text(p.gold)),
        el("td", null, text(p.predicted)), el("td", null, text(p.final)),
        el("td", null, p.correct === true ? "yes" : p.correct === false ? "no" : ""),
        el("td", null, text(p.category)), el("td", null, String(p.refinements)),
        el("td", { class: "message" }, text(p.message).split("\n")[0]));
      row.addEventListener("click", () => select(index));
      body.append(row);
    });
    $("count").textContent = shown + " of " + problems.length + " problems";
  }

  function select(index) {
    selected = index;
    renderTable();
    renderDetail(problems[index]);
  }

  function field(label, value) {
    return el("div", { class: "field" }, el("span", { class: "label" }, label), " ", el("span", null, text(value)));
  }

  function programView(program, errorLine) {
    if (program === null || program === undefined) return el("p", { class: "hint" }, "no program");
    const lines = program.split("\n");
    const pre = el("pre", { class: "program" });
    lines.forEach((line, i) => {
      const number = i + 1;
      pre.append(el("span", { class: "line" + (number === errorLine ? " error-line" : ""), "data-line": String(number) },
        el("span", { class: "ln" }, String(number).padStart(3, " ")), " ", line, "\n"));
    });
    return pre;
  }

  function diffView(lines) {
    const pre = el("pre", { class: "diff" });
    for (const line of lines) {
      const kind = line.startsWith("+++") || line.startsWith("---") ? "head"
        : line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "same";
      pre.append(el("span", { class: kind }, line, "\n"));
    }
    return pre;
  }

  // Explanations: nicer views for the shapes we know, a collapsible tree for everything (and anything new).
  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  const isGoal = (v) => isObject(v) && typeof v.goal === "string";

  // The LP solver stores a goal tree as a flat table (node 0 is the root; children are indices), so a
  // subproof that several derivations share is stored once. Expand it once; later uses are references.
  const isNodeTable = (v) => isObject(v) && Array.isArray(v.nodes) && v.nodes.length > 0
    && v.nodes.every((n) => isGoal(n) && Array.isArray(n.children) && n.children.every(Number.isInteger));

  function nestNodes(table) {
    const shown = new Set();
    const nest = (index) => {
      const node = table.nodes[index];
      if (!node) return { goal: "(missing node " + index + ")" };
      if (shown.has(index)) return { goal: node.goal, by: (node.by ? node.by + "  " : "") + "[shown above]" };
      shown.add(index);
      return { goal: node.goal, by: node.by, children: node.children.map(nest) };
    };
    return nest(0);
  }

  function goalTable(table) {
    const box = el("div", { class: "goal-tree" }, goalNode(nestNodes(table)));
    if (typeof table.truncated === "string") box.append(el("p", { class: "hint" }, "goal tree truncated: " + table.truncated));
    return box;
  }

  function goalNode(node) {
    const kids = [];
    const rest = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === "goal" || (key === "by" && typeof value === "string")) continue;
      if (Array.isArray(value) && value.length && value.every(isGoal)) kids.push(...value);
      else if (isGoal(value)) kids.push(value);
      else if (!(Array.isArray(value) && value.length === 0)) rest[key] = value;
    }
    const summary = el("summary", null, el("span", { class: "goal" }, node.goal),
      typeof node.by === "string" ? el("span", { class: "by" }, " \u2190 " + node.by) : null);
    const details = el("details", { class: "goal-node", open: true }, summary);
    if (Object.keys(rest).length) details.append(valueTree(rest));
    for (const child of kids) details.append(goalNode(child));
    if (!kids.length) details.classList.add("leaf");
    return details;
  }

  function recordsTable(rows) {
    const columns = unique(rows.flatMap((r) => Object.keys(r)));
    return el("table", { class: "small" },
      el("thead", null, el("tr", null, ...columns.map((c) => el("th", null, c)))),
      el("tbody", null, ...rows.map((r) => el("tr", null, ...columns.map((c) => el("td", null, scalar(r[c])))))));
  }

  const isEmpty = (v) => v === null || v === undefined || v === "" || (Array.isArray(v) && !v.length)
    || (isObject(v) && !Object.keys(v).length);
  const scalar = (v) => (isObject(v) || Array.isArray(v) ? JSON.stringify(v) : text(v));
  const isScalar = (v) => v === null || typeof v !== "object";

  function valueTree(value, name) {
    if (isGoal(value)) return goalNode(value);
    if (Array.isArray(value) && value.length && value.every((r) => isObject(r) && Object.values(r).every(isScalar)))
      return el("div", { class: "kv" }, name !== undefined ? el("span", { class: "label" }, name + " ") : null, recordsTable(value));
    if (isObject(value) || Array.isArray(value)) {
      const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
      const body = el("div", { class: "tree-body" });
      for (const [key, child] of entries) body.append(valueTree(child, key));
      const label = (name !== undefined ? name + " " : "") + (Array.isArray(value) ? "[" + value.length + "]" : "{" + entries.length + "}");
      return el("details", { class: "tree", open: entries.length <= 12 }, el("summary", null, label), body);
    }
    const shown = typeof value === "string" && value.includes("\n") ? el("pre", null, value) : el("span", { class: "value" }, scalar(value));
    return el("div", { class: "kv" }, name !== undefined ? el("span", { class: "label" }, name + ": ") : null, shown);
  }

  function explanationView(explanation) {
    if (explanation === null || explanation === undefined) return el("p", { class: "hint" }, "no explanation stored");
    if (!isObject(explanation)) return valueTree(explanation);
    const box = el("div", { class: "explanation" });
    const rest = {};
    for (const [key, value] of Object.entries(explanation)) {
      if (isGoal(value)) box.append(el("h4", null, key.replace(/_/g, " ")), el("div", { class: "goal-tree" }, goalNode(value)));
      else if (isNodeTable(value)) box.append(el("h4", null, key.replace(/_/g, " ")), goalTable(value));
      else if (key === "proof" && typeof value === "string") box.append(el("h4", null, "proof"), el("pre", { class: "proof" }, value));
      else if (key === "options" && isObject(value) && Object.values(value).every(isScalar))
        box.append(el("h4", null, "option values"), recordsTable([value]));
      else if (key === "sample" && Array.isArray(value)) box.append(el("h4", null, "solutions"), valueTree(value));
      else rest[key] = value;
    }
    box.prepend(...Object.entries(rest).map(([key, value]) => valueTree(value, key)));
    return box;
  }

  function roundView(round, last) {
    // A kb batch's rounds are its goals (or claims), each titled by the viewer.
    const title = round.title || (round.round === 0 ? "program (round 0)" : "refinement round " + round.round);
    const section = el("details", { class: "round", open: last, "data-round": String(round.round) }, el("summary", null, title,
      round.error ? el("span", { class: "error-tag" }, " " + text(round.error.category)) : el("span", { class: "ok-tag" }, " executed")));
    if (round.diff && round.diff.length) section.append(el("h4", null, "changes from the previous round"), diffView(round.diff));
    if (round.error) section.append(el("div", { class: "error" }, text(round.error.category) + ": " + text(round.error.message)));
    // A chain's step (round.heading "reply") has the model's reply where a round has its program, and no solver.
    section.append(el("h4", null, round.heading || (round.title ? "goal" : "program")), programView(round.program, round.error_line));
    if (!round.heading) {
      section.append(field("verdict", round.verdict));
      section.append(el("h4", null, "solver explanation"), explanationView(round.explanation));
    }
    const details = Object.fromEntries(Object.entries(round.details || {}).filter(([, v]) => !isEmpty(v)));
    if (Object.keys(details).length) {
      const fields = valueTree(details, "other record fields");
      fields.open = false;
      section.append(fields);
    }
    return section;
  }

  function renderDetail(p) {
    const detail = $("detail");
    detail.replaceChildren();
    detail.append(el("h3", null, p.dataset + " / " + p.id));
    detail.append(field("gold", p.gold), field("predicted", p.predicted), field("final", p.final),
      field("correct", p.correct === true ? "yes" : p.correct === false ? "no" : "unknown"),
      p.backup ? field("backup", p.backup) : "",
      p.votes ? field("votes", p.votes.map((v) => text(v)).join(", ")) : "",
      p.tokens !== null && p.tokens !== undefined ? field("tokens", p.tokens.toLocaleString("en")) : "",
      p.cost !== null && p.cost !== undefined ? field("cost", "$" + p.cost) : "");
    if (p.gold_program) {  // a run held against the dataset's gold programs (gold_agreement.jsonl)
      const g = p.gold_program;
      detail.append(field("gold program's verdict", g.verdict === null ? "none (" + text(g.error) + ")" : g.verdict),
        field("agrees with the gold program", g.agrees === true ? "yes" : g.agrees === false ? "no" : "not compared"),
        field("the run's premises with the gold conclusion", g.premises_unchecked ? "not checked (" + text(g.premises_unchecked) + ")"
          : text(g.premises) + (g.premises_give_label ? " (the label)" : " (not the label)")));
    }
    if (p.category) detail.append(el("div", { class: "error" }, p.category + ": " + text(p.message)));
    if (p.context !== null && p.context !== undefined) detail.append(el("h4", null, "context"), el("p", { class: "context" }, p.context));
    if (p.question !== null && p.question !== undefined) detail.append(el("h4", null, "question"), el("p", null, p.question));
    if (p.options && p.options.length) detail.append(el("h4", null, "options"), el("ul", { class: "options" }, ...p.options.map((o) => el("li", null, o))));
    if ((p.context === null || p.context === undefined) && p.kind !== "kb") detail.append(el("p", { class: "hint" }, "problem text not available (pass --data-dir or set LOGICPIPE_DATA)"));
    p.rounds.forEach((round, i) => detail.append(roundView(round, i === p.rounds.length - 1)));
  }

  // Selects report a choice as "change" (some browsers send no "input" for them); the search box as "input".
  for (const id of ["f-dataset", "f-outcome", "f-category", "f-rounds"]) $(id).addEventListener("change", renderTable);
  $("f-search").addEventListener("input", renderTable);
  renderTable();
})();
