// The connector page's Verify panel (docs/verify.md): "Verify now" posts to the REST API (operators), and the
// panel shows the run in progress and the history of runs, read from the API every few seconds.
(() => {
  const panel = document.getElementById("verify");
  if (!panel) return;
  const url = panel.dataset.url;
  const runsBox = document.getElementById("verify-runs");
  const progress = document.getElementById("verify-progress");

  const cell = (row, text, className) => {
    const td = document.createElement("td");
    td.textContent = text === null || text === undefined ? "–" : String(text);
    if (className) td.className = className;
    row.appendChild(td);
    return td;
  };
  const when = (iso) => (iso ? new Date(iso).toLocaleString() : "–");

  function outcome(run) {
    if (run.status === "failed") return run.error || "failed";
    if (run.status !== "done") return run.status;
    const r = run.report || {};
    if (!run.mismatched) return `equal: ${run.rows} rows in ${r.chunks} chunks`;
    return `${run.mismatched} rows differ (missing in topic ${r.missing}, extra in topic ${r.extra}, ` +
      `different ${r.different})`;
  }

  function details(run) {
    const list = document.createElement("ul");
    list.className = "verify-keys small";
    for (const m of (run.report && run.report.mismatches) || []) {
      const item = document.createElement("li");
      const fields = m.fields && Object.keys(m.fields).length ? " " + JSON.stringify(m.fields) : "";
      item.textContent = `${m.kind} · ${m.table} · ${m.key}${fields}`;
      list.appendChild(item);
    }
    return list;
  }

  function render(runs) {
    const active = runs.find((r) => r.status === "queued" || r.status === "running");
    progress.hidden = !active;
    if (active) {
      const p = active.progress || {};
      progress.textContent = active.status === "queued" ? `Run ${active.id} is queued for a worker…`
        : p.table ? `Run ${active.id}: ${p.table}, chunk ${p.chunk} of ${p.chunks} (${p.rows} rows so far)…`
          : `Run ${active.id} is waiting for the connector to capture up to where the source was read…`;
    }
    if (!runs.length) {
      runsBox.innerHTML = '<p class="muted">No run yet.</p>';
      return;
    }
    const table = document.createElement("table");
    table.innerHTML = "<thead><tr><th>Run</th><th>Started</th><th>By</th><th>Status</th><th>Outcome</th>" +
      "<th>Seconds</th></tr></thead>";
    const body = document.createElement("tbody");
    for (const run of runs) {
      const row = document.createElement("tr");
      row.dataset.run = run.id;
      row.dataset.status = run.status;
      cell(row, `#${run.id}`);
      cell(row, when(run.started_at || run.requested_at));
      cell(row, run.requested_by || run.trigger);
      cell(row, run.status, `status-${run.status}`);
      const result = cell(row, outcome(run), run.mismatched ? "verify-mismatch" : "");
      if (run.mismatched) result.appendChild(details(run));
      cell(row, run.report ? run.report.seconds : null);
      body.appendChild(row);
    }
    table.appendChild(body);
    runsBox.replaceChildren(table);
  }

  async function refresh() {
    try {
      const response = await fetch(url + "?limit=10", { credentials: "same-origin",
                                                        headers: { Accept: "application/json" } });
      if (response.ok) render((await response.json()).results);
    } catch (e) { /* the next refresh tries again */ }
  }

  const form = panel.querySelector("form.verify-form");
  if (form) {
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
      const button = form.querySelector("button");
      button.disabled = true;
      try {
        const response = await fetch(url, {
          method: "POST", credentials: "same-origin", body: "{}",
          headers: { "Content-Type": "application/json", Accept: "application/json", "X-CDC-Source": "dashboard",
                     "X-CSRFToken": form.querySelector("[name=csrfmiddlewaretoken]").value },
        });
        const data = await response.json().catch(() => ({}));
        progress.hidden = false;
        progress.textContent = response.ok ? `Run ${data.id} queued.` : `Refused: ${data.detail || response.status}`;
      } finally {
        button.disabled = false;
        refresh();
      }
    });
  }
  refresh();
  setInterval(refresh, 3000);
})();
