// The report's only script of ours: draw the charts from the page's JSON data, and filter the verdict tables
// and the output grid.
// It builds no HTML from strings: text enters the page through textContent only.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);

  const drawn = [];
  for (const element of document.querySelectorAll("[data-figure]")) {
    const figure = data.figures[element.dataset.figure];
    figure.layout.template = data.template;
    drawn.push(Plotly.newPlot(element, figure.data, figure.layout, { displaylogo: false, responsive: true }));
  }
  Promise.all(drawn).then(function () {
    document.body.dataset.charts = String(drawn.length);
  });

  // A judge section's filters: a verdict row shows when it matches every chosen value; an output shows when any
  // of its verdicts does.
  for (const bar of document.querySelectorAll("div.filters")) {
    const section = bar.closest("section");
    const selects = Array.from(bar.querySelectorAll("select[data-filter]"));
    const rows = Array.from(section.querySelectorAll("tr.verdict"));
    const count = bar.querySelector("output.count");
    const apply = function () {
      let shown = 0;
      for (const row of rows) {
        const match = selects.every((s) => s.value === "" || row.dataset[s.dataset.filter] === s.value);
        row.hidden = !match;
        shown += match ? 1 : 0;
      }
      let outputs = 0;
      for (const output of section.querySelectorAll("article.output")) {
        const any = output.querySelector("tr.verdict:not([hidden])") !== null;
        output.hidden = !any;
        outputs += any ? 1 : 0;
      }
      count.textContent = shown + " of " + rows.length + " verdicts in " + outputs + " output(s)";
    };
    for (const select of selects) {
      select.addEventListener("change", apply);
    }
  }

  // An output grid's filter: with "disagree" ticked, only the rows where the columns differ show.
  for (const bar of document.querySelectorAll("div.grid-filters")) {
    const section = bar.closest("section");
    const box = bar.querySelector("input[data-grid-filter]");
    const rows = Array.from(section.querySelectorAll("tr.grid-row"));
    const count = bar.querySelector("output.count");
    box.addEventListener("change", function () {
      let shown = 0;
      for (const row of rows) {
        row.hidden = box.checked && row.dataset.disagree !== "yes";
        shown += row.hidden ? 0 : 1;
      }
      count.textContent = shown + " of " + rows.length + " rows";
    });
  }
})();
