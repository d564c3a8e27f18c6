// Spark pages (docs/dashboard.md, "Spark jobs"): the job form shows the fields of the chosen template; "Launch run"
// opens the new run's page; the run page follows its run through the API once a second until it ends: status,
// step, Spark stage progress, counters, the time elapsed (from the first second: a Spark driver needs half a minute
// to say anything), the driver log as it grows, then the outcome, the preview table, its CSV download and, for a
// statistics run, a chart of its events per window and operation.
// Runs once every deferred script ran: live.js (loaded after this file) provides cdcFormat and cdcTimeAxis.
document.addEventListener("DOMContentLoaded", function () {
  "use strict";
  const $ = (sel, root) => (root || document).querySelector(sel);

  // --- job form: one group of fields per template ---------------------------------------------------------------
  const select = $("[data-template-select]");
  if (select) {
    const show = () => document.querySelectorAll("fieldset[data-templates]").forEach((group) => {
      group.hidden = !group.dataset.templates.split(" ").includes(select.value);
    });
    select.addEventListener("change", show);
    show();
  }

  // --- launch: go to the run's page -----------------------------------------------------------------------------
  document.addEventListener("cdc:action", (event) => {
    const { form, data } = event.detail;
    if (form.dataset.go === "run" && data.id) window.location.assign(`/spark/runs/${data.id}/`);
  });

  // --- Delta tables page: "Query version n" puts a time-travel query of that version in the SQL box ------------
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-query-table]");
    const box = $("#delta-sql");
    if (!button || !box) return;
    box.value = `SELECT * FROM ${button.dataset.queryTable} VERSION AS OF ${button.dataset.queryVersion} LIMIT 100`;
    box.focus();
  });

  // --- run page -------------------------------------------------------------------------------------------------
  const root = $("#spark-run");
  if (!root) return;
  let lastSeq = 0;
  let stopped = false;

  const text = (v) => (v === null || v === undefined || v === "" ? "—" : String(v));
  const cell = (v) => (v !== null && typeof v === "object" ? JSON.stringify(v) : text(v));
  const setRun = (name, value) => { const node = $(`[data-run="${name}"]`, root); if (node) node.textContent = value; };

  // A timestamp of the result (ISO-8601; without a zone it is UTC, Spark's session time zone) in the one date
  // format of every page, its UTC value in the title; the CSV keeps the values as Spark wrote them.
  const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?$/;
  const utcMs = (v) => Date.parse(/Z|[+-]\d\d:\d\d$/.test(v) ? v : v + "Z");
  function previewCell(v) {
    const td = document.createElement("td");
    const when = typeof v === "string" && TIMESTAMP.test(v) ? utcMs(v) : NaN;
    if (isNaN(when)) {
      td.textContent = cell(v);
      return td;
    }
    const time = Object.assign(document.createElement("time"), {
      dateTime: new Date(when).toISOString(), textContent: window.cdcFormat.datetime(when),
      title: new Date(when).toISOString().replace(".000Z", "Z") + " (UTC)" });
    td.append(time);
    return td;
  }

  function renderPreview(preview) {
    const table = $("#preview");
    if (!preview || !preview.columns || table.dataset.filled) return;
    table.dataset.filled = "1";
    const head = document.createElement("tr");
    preview.columns.forEach((c) => head.append(Object.assign(document.createElement("th"), { scope: "col", textContent: c })));
    table.tHead.replaceChildren(head);
    const rows = preview.rows.map((row) => {
      const tr = document.createElement("tr");
      row.forEach((v) => tr.append(previewCell(v)));
      return tr;
    });
    table.tBodies[0].replaceChildren(...rows);
    setRun("preview-note", `First ${preview.rows.length} row(s) of the result.`);
    $("#preview-csv").hidden = !preview.columns.length;
    if (root.dataset.template === "stats") renderStatsChart(preview);
  }

  // Statistics runs: events per window start, one line per operation, from the preview's rows.
  const OP_COLORS = { c: "#1f7a3a", u: "#1f5fae", d: "#b3261e", r: "#7a4fb0", t: "#9a5b00", tombstone: "#5b6775" };
  function renderStatsChart(preview) {
    const at = (name) => preview.columns.indexOf(name);
    const [iStart, iOp, iEvents] = [at("window_start"), at("op"), at("events")];
    if (iStart < 0 || iOp < 0 || iEvents < 0 || !preview.rows.length || typeof uPlot === "undefined") return;
    const seconds = (v) => utcMs(v) / 1000;
    const byOp = {}, times = new Set();
    preview.rows.forEach((row) => {
      const t = seconds(String(row[iStart])), op = String(row[iOp] ?? "tombstone");
      if (isNaN(t)) return;
      times.add(t);
      byOp[op] = byOp[op] || {};
      byOp[op][t] = (byOp[op][t] || 0) + Number(row[iEvents] || 0);
    });
    const xs = Array.from(times).sort((a, b) => a - b);
    const ops = Object.keys(byOp).sort();
    if (!xs.length) return;
    const box = $("#preview-chart-box"), node = $("#preview-chart");
    box.hidden = false;
    const pad = xs.length > 1 ? (xs[xs.length - 1] - xs[0]) * 0.05 : 120; // one window: a readable axis around it
    new uPlot({
      width: Math.max(240, node.clientWidth), height: 200,
      scales: { x: { time: true, range: () => [xs[0] - pad, xs[xs.length - 1] + pad] },
                y: { range: (u, min, max) => [0, Math.max(1, max * 1.15)] } },
      axes: [window.cdcTimeAxis || {}, { stroke: "#5b6775", grid: { stroke: "#eef1f4" }, size: 55 }],
      series: [{ value: (u, v) => (v == null ? "—" : window.cdcFormat.datetime(v * 1000)) },
        ...ops.map((op) => ({ label: `op ${op}`, stroke: OP_COLORS[op] || "#333", width: 1.5,
                              points: { show: true, size: 5 } }))],
    }, [xs, ...ops.map((op) => xs.map((t) => byOp[op][t] ?? 0))], node);
    $("#preview-chart-note").textContent = `Events per window start and operation, from the ${preview.rows.length} ` +
      "preview row(s)" + (preview.rows.length >= 100 ? " (the first 100 of the result; the CSV has the same rows)." : ".");
  }

  // The time since the run was asked for (queued) or started, until it ends; then its duration, measured on the
  // same span (started → finished), so the figure never goes backwards when the run ends (duration_s, the driver's
  // own time, leaves out spark-submit's start).
  function elapsed(run) {
    const started = Date.parse(run.started_at), finished = Date.parse(run.finished_at);
    if (!isNaN(started) && !isNaN(finished)) return window.cdcFormat.seconds(Math.max(0, (finished - started) / 1000));
    if (run.duration_s !== null && run.duration_s !== undefined) return window.cdcFormat.seconds(run.duration_s);
    const since = Date.parse(run.started_at || run.created_at);
    const end = run.finished_at ? Date.parse(run.finished_at) : Date.now();
    if (isNaN(since)) return "—";
    const text = window.cdcFormat.seconds(Math.max(0, (end - since) / 1000));
    return run.finished ? text : run.status === "queued" ? `queued for ${text}` : `${text} so far`;
  }

  function render(run) {
    const badge = $("#run-status");
    badge.textContent = run.status;
    badge.dataset.status = run.status;
    badge.className = `badge status-${run.status}`;
    const progress = run.progress || {};
    setRun("step", progress.step ? progress.step
      : run.status === "queued" ? "queued: waiting for a Spark worker"
      : run.status === "running" ? "starting Spark (spark-submit, the driver's JVM)" : "—");
    const stage = progress.stage;
    const bar = $("#stage-progress");
    if (stage && stage.tasks) {
      setRun("stage", `stage ${stage.stage_id}: ${stage.completed}/${stage.tasks} tasks` +
        (stage.active ? `, ${stage.active} running` : "") + (stage.failed ? `, ${stage.failed} failed` : ""));
      bar.value = Math.round((100 * stage.completed) / stage.tasks);
    }
    if (run.status === "succeeded") { bar.value = 100; setRun("stage", "all stages done"); }
    setRun("batches", text(progress.batches));
    setRun("rows_in", text(run.rows_in ?? progress.rows_in));
    setRun("rows_out", text(run.rows_out));
    setRun("duration", elapsed(run));
    setRun("output_path", text(run.output_path));
    setRun("master", text(run.master));
    setRun("worker", text(run.worker));
    const error = $("#run-error");
    error.textContent = run.error || "";
    error.hidden = !run.error;
    if (run.finished) {
      const actions = $("#run-actions");
      if (actions) actions.hidden = true;
      if (run.preview) renderPreview(run.preview); else setRun("preview-note", "No preview.");
    }
  }

  async function getJson(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return response.json();
  }

  async function pullLog() {
    const log = $("#run-log");
    for (;;) {
      const data = await getJson(`${root.dataset.logUrl}?after=${lastSeq}`);
      if (!data.lines.length) return;
      const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      log.append(data.lines.map((l) => (l.stream === "stderr" ? "  " : "» ") + l.text).join("\n") + "\n");
      lastSeq = data.last;
      if (atEnd) log.scrollTop = log.scrollHeight;
    }
  }

  async function tick() {
    try {
      const run = await getJson(root.dataset.runUrl);
      latest = run;
      render(run);
      await pullLog();
      if (run.finished) { stopped = true; return; }
    } catch (e) {
      setRun("step", `cannot reach the server (${e.message}); retrying`);
    }
    if (!stopped) setTimeout(tick, 1000);
  }

  const initial = JSON.parse($("#run-data").textContent);
  let latest = initial;
  render(initial);
  tick();
  // the elapsed time moves every second, between the polls too
  const clock = setInterval(() => {
    if (latest.finished) { clearInterval(clock); return; }
    setRun("duration", elapsed(latest));
  }, 1000);
});
