// Spark pages (docs/dashboard.md, "Spark jobs"): the job form shows the fields of the chosen template; "Launch run"
// opens the new run's page; the run page follows its run through the API once a second until it ends: status,
// step, Spark stage progress, counters, the driver log as it grows, then the outcome and the preview table.
(function () {
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

  // --- run page -------------------------------------------------------------------------------------------------
  const root = $("#spark-run");
  if (!root) return;
  let lastSeq = 0;
  let stopped = false;

  const text = (v) => (v === null || v === undefined || v === "" ? "—" : String(v));
  const cell = (v) => (v !== null && typeof v === "object" ? JSON.stringify(v) : text(v));
  const setRun = (name, value) => { const node = $(`[data-run="${name}"]`, root); if (node) node.textContent = value; };

  function renderPreview(preview) {
    const table = $("#preview");
    if (!preview || !preview.columns || table.dataset.filled) return;
    table.dataset.filled = "1";
    const head = document.createElement("tr");
    preview.columns.forEach((c) => head.append(Object.assign(document.createElement("th"), { scope: "col", textContent: c })));
    table.tHead.replaceChildren(head);
    const rows = preview.rows.map((row) => {
      const tr = document.createElement("tr");
      row.forEach((v) => tr.append(Object.assign(document.createElement("td"), { textContent: cell(v) })));
      return tr;
    });
    table.tBodies[0].replaceChildren(...rows);
    setRun("preview-note", `First ${preview.rows.length} row(s) of the result.`);
  }

  function render(run) {
    const badge = $("#run-status");
    badge.textContent = run.status;
    badge.dataset.status = run.status;
    badge.className = `badge status-${run.status}`;
    const progress = run.progress || {};
    setRun("step", text(progress.step));
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
    setRun("duration", run.duration_s === null ? "—" : `${run.duration_s.toFixed(1)} s`);
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
      render(run);
      await pullLog();
      if (run.finished) { stopped = true; return; }
    } catch (e) {
      setRun("step", `cannot reach the server (${e.message}); retrying`);
    }
    if (!stopped) setTimeout(tick, 1000);
  }

  const initial = JSON.parse($("#run-data").textContent);
  render(initial);
  tick();
})();
