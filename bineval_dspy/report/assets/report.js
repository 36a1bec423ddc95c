// The report's only script of ours: draw the charts from the page's JSON data, and draw the row lists (a judge
// run's scorecards, an experiment's output grid) a page at a time, filtered: from the rows inlined in the page's
// data (the file `bineval report` writes) or from `bineval view`'s JSON API (the rows never enter the page whole).
// It builds no HTML from strings: text enters the page through textContent only.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const PAGE = 50;

  const drawn = [];
  for (const element of document.querySelectorAll("[data-figure]")) {
    const figure = data.figures[element.dataset.figure];
    figure.layout.template = data.template;
    drawn.push(Plotly.newPlot(element, figure.data, figure.layout, { displaylogo: false, responsive: true }));
  }
  Promise.all(drawn).then(function () {
    document.body.dataset.charts = String(drawn.length);
  });

  // -- the filter: report/pages.py's rule, for inlined rows ------------------------------------------------------
  const MARK_FIELDS = ["dimension", "answer", "judge", "question", "arm"];

  function marks(row) {
    if (row.verdicts) {
      return row.verdicts;
    }
    const found = [];
    for (const cell of row.cells) {
      if (cell === null) {
        continue;
      }
      for (const check of cell.checks) {
        found.push({ arm: cell.arm, question: check.name, answer: check.answer });
      }
      if (cell.error) {
        found.push({ arm: cell.arm, question: "", answer: "unanswered" });
      }
    }
    return found;
  }

  function onMarks(query) {
    return query.failed || MARK_FIELDS.some((name) => query[name]);
  }

  function markMatches(mark, query) {
    return MARK_FIELDS.every((name) => !query[name] || (mark[name] || "") === query[name]) && !(query.failed && mark.answer === "yes");
  }

  function matches(row, query) {
    if (query.id && !row.id.toLowerCase().includes(query.id.toLowerCase())) {
      return false;
    }
    if (query.disagree && !row.disagree) {
      return false;
    }
    return !onMarks(query) || marks(row).some((mark) => markMatches(mark, query));
  }

  function pageOf(rows, query, offset) {
    const kept = rows.filter((row) => matches(row, query));
    let total = 0;
    let shown = 0;
    for (const row of rows) {
      total += marks(row).length;
    }
    for (const row of kept) {
      shown += onMarks(query) ? marks(row).filter((mark) => markMatches(mark, query)).length : marks(row).length;
    }
    return { total: rows.length, matched: kept.length, marks: total, marks_matched: shown, offset: offset, rows: kept.slice(offset, offset + PAGE) };
  }

  function inlined(rows) {
    return (query, offset) => Promise.resolve(pageOf(rows, query, offset));
  }

  function served(section) {
    return function (query, offset) {
      const params = new URLSearchParams({ section: section, offset: String(offset), limit: String(PAGE) });
      for (const [name, value] of Object.entries(query)) {
        if (value) {
          params.set(name, value === true ? "1" : value);
        }
      }
      return fetch(data.api + "?" + params.toString()).then(function (response) {
        if (!response.ok) {
          throw new Error("rows: HTTP " + response.status);
        }
        return response.json();
      });
    };
  }

  // -- drawing -------------------------------------------------------------------------------------------------
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (name === "class") {
        node.className = value;
      } else if (name.startsWith("data-") || name === "title") {
        node.setAttribute(name, value);
      } else {
        node[name] = value;
      }
    }
    for (const child of children) {
      if (child !== null && child !== undefined) {
        node.append(child); // a string is appended as a text node
      }
    }
    return node;
  }

  function spend(entries) {
    if (!entries.length) {
      return null;
    }
    return el("dl", { class: "cost" }, el("dt", {}, "cost"), ...entries.map(([key, value]) => el("dd", {}, el("span", { class: "key" }, key), " " + value)));
  }

  function output(row, query) {
    const head = el("h4", {}, "output ", el("code", {}, row.id), ": " + row.head);
    if (row.unanswered) {
      head.append(", ", el("span", { class: "answer-unanswered" }, row.unanswered + " unanswered"));
    }
    const verdicts = row.verdicts.map(function (v) {
      const tr = el(
        "tr",
        { class: "verdict", "data-dimension": v.dimension, "data-answer": v.answer, "data-judge": v.judge },
        el("td", { class: "text" }, v.dimension),
        el("td", { class: "text" }, v.question),
        el("td", { class: "answer answer-" + v.answer }, v.answer),
        el("td", { class: "num" }, v.p_yes),
        el("td", { class: "text explanation" }, v.explanation),
        el("td", { class: "text judge" }, v.judge)
      );
      tr.hidden = onMarks(query) && !markMatches(v, query);
      return tr;
    });
    const titles = ["dimension", "question", "answer", "P(yes)", "explanation", "judge"].map((t) => el("th", {}, t));
    return el(
      "article",
      { class: "output", "data-output": row.id },
      head,
      el("p", { class: "scores" }, ...row.scores.map(([dim, value]) => el("span", {}, dim + " " + value))),
      row.input ? el("details", {}, el("summary", {}, "input"), el("pre", { class: "text" }, row.input)) : null,
      el("pre", { class: "text output-text" }, row.output),
      spend(row.spend),
      el("table", { class: "verdicts" }, el("thead", {}, el("tr", {}, ...titles)), el("tbody", {}, ...verdicts))
    );
  }

  function gridRow(row) {
    const cells = row.cells.map(function (c, k) {
      if (c === null) {
        return el("td", { class: "cell" }, "-");
      }
      const checks = c.checks.length
        ? el("ul", { class: "checks" }, ...c.checks.map((k) => el("li", { class: "answer-" + k.answer, "data-check": k.name, "data-answer": k.answer, title: k.text }, k.answer + " " + k.name)))
        : null;
      return el(
        "td",
        { class: "cell", "data-column": c.arm },
        el("div", { class: "cell-score" }, c.score),
        checks,
        c.error ? el("p", { class: "error" }, c.error) : null,
        c.output !== null ? el("pre", { class: "text output" }, c.output) : null
      );
    });
    return el(
      "tr",
      { class: "grid-row", "data-row": row.id, "data-disagree": row.disagree ? "yes" : "no" },
      el("td", { class: "text" }, row.id),
      el("td", { class: "text" }, el("pre", { class: "text" }, row.input)),
      ...cells
    );
  }

  // -- one row list: its filter bar, its rows, its pager ---------------------------------------------------------
  for (const bar of document.querySelectorAll("div.row-filters")) {
    const section = bar.closest("section");
    const box = section.querySelector(".rows");
    const kind = box.dataset.kind;
    const pager = section.querySelector("nav.pager");
    const count = bar.querySelector("output.count");
    const controls = Array.from(bar.querySelectorAll("[data-filter]"));
    const source = data.api ? served(section.id) : inlined(data.rows[section.id] || []);
    let offset = 0;
    let asked = 0;

    const query = function () {
      const q = {};
      for (const control of controls) {
        q[control.dataset.filter] = control.type === "checkbox" ? control.checked : control.value.trim();
      }
      return q;
    };

    const load = function () {
      const q = query();
      const mine = ++asked;
      box.dataset.state = "loading";
      source(q, offset)
        .then(function (page) {
          if (mine !== asked) {
            return; // a later change asked for another page
          }
          box.replaceChildren(...page.rows.map((row) => (kind === "judge" ? output(row, q) : gridRow(row))));
          count.textContent =
            kind === "judge" ? page.marks_matched + " of " + page.marks + " verdicts in " + page.matched + " output(s)" : page.matched + " of " + page.total + " rows";
          const pages = Math.max(1, Math.ceil(page.matched / PAGE));
          const first = page.matched ? offset + 1 : 0;
          pager.querySelector("output.page").textContent =
            "page " + (Math.floor(offset / PAGE) + 1) + " of " + pages + " (" + first + "-" + (offset + page.rows.length) + " of " + page.matched + ")";
          pager.querySelector('[data-page="prev"]').disabled = offset === 0;
          pager.querySelector('[data-page="next"]').disabled = offset + PAGE >= page.matched;
          box.dataset.state = "ready";
          box.dataset.offset = String(offset);
        })
        .catch(function (error) {
          if (mine === asked) {
            box.dataset.state = "failed";
            count.textContent = String(error.message || error);
          }
        });
    };

    let typing = null;
    for (const control of controls) {
      control.addEventListener(control.type === "search" ? "input" : "change", function () {
        offset = 0;
        box.dataset.state = "loading";
        clearTimeout(typing);
        typing = setTimeout(load, control.type === "search" ? 200 : 0);
      });
    }
    pager.querySelector('[data-page="prev"]').addEventListener("click", function () {
      offset = Math.max(0, offset - PAGE);
      load();
    });
    pager.querySelector('[data-page="next"]').addEventListener("click", function () {
      offset += PAGE;
      load();
    });
    load();
  }
})();
