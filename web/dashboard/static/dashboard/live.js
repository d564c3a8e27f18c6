// Live parts of the dashboard (docs/dashboard.md): one WebSocket to /ws/metrics/, reconnected with backoff, whose
// reports update the elements marked with data-bind inside [data-rs="<connector>/<replica set>"] and
// [data-connector="<name>"]; uPlot charts and sparklines; local times. Formats match templatetags/dashboard.py.
(function () {
  "use strict";

  const fmt = {
    ms(v) {
      if (v === null || v === undefined || v === "") return "—";
      if (v < 1000) return Math.round(v) + " ms";
      const s = v / 1000;
      if (s < 60) return s.toFixed(1) + " s";
      if (s < 3600) return Math.floor(s / 60) + " min " + Math.floor(s % 60) + " s";
      return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
    },
    seconds(v) { return v === null || v === undefined ? "—" : fmt.ms(v * 1000); },
    rate(v) { return v === null || v === undefined ? "—" : (v >= 100 ? v.toFixed(0) : v.toFixed(1)) + "/s"; },
    count(v) {
      return v === null || v === undefined ? "—" : Math.trunc(v).toString().replace(/\B(?=(\d{3})+(?!\d))/g, "\u202f");
    },
    // The one date/time format of every page: YYYY-MM-DD HH:MM:SS, 24-hour, the browser's time zone (the
    // element's title gives UTC); chart axes show the clock part of it.
    datetime(ms) {
      const d = new Date(ms);
      if (ms === null || ms === undefined || isNaN(d)) return "—";
      return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock(d, true)}`;
    },
    time(ms) { return ms ? fmt.datetime(ms) : "never"; },
    connected(v) { return v ? "change stream open" : "not connected"; },
  };
  window.cdcFormat = fmt;
  function pad(n) { return String(n).padStart(2, "0"); }
  function clock(d, seconds) {
    return `${pad(d.getHours())}:${pad(d.getMinutes())}` + (seconds ? `:${pad(d.getSeconds())}` : "");
  }
  // Time axis labels of uPlot charts (x in seconds): parts of fmt.datetime — the clock (HH:MM, with seconds when
  // ticks are under a minute apart), the date (YYYY-MM-DD) when they are a day or more apart — at least 90 px apart
  // so they never overlap, even on a phone.
  const timeAxis = {
    stroke: "#5b6775", grid: { stroke: "#eef1f4" }, space: 90,
    values: (u, splits, axisIdx, space, incr) => splits.map((v) => {
      if (v == null) return null;
      const d = new Date(v * 1000);
      return incr >= 86400 ? fmt.datetime(v * 1000).slice(0, 10) : clock(d, incr < 60);
    }),
  };
  window.cdcTimeAxis = timeAxis;

  const $$ = (root, sel) => Array.from(root.querySelectorAll(sel));
  const pick = (obj, path) => path.split(".").reduce((o, k) => (o == null ? undefined : o[k]), obj);
  const el = (tag, props, ...children) => {
    const node = Object.assign(document.createElement(tag), props || {});
    children.forEach((c) => node.append(c));
    return node;
  };

  function localTimes(root) {
    $$(root, "time.local").forEach((t) => {
      const when = t.dataset.ms ? new Date(Number(t.dataset.ms)) : new Date(t.getAttribute("datetime"));
      if (isNaN(when)) return;
      t.textContent = fmt.datetime(when.getTime());
      t.title = when.toISOString().replace(".000Z", "Z") + " (UTC)";
    });
  }
  document.addEventListener("DOMContentLoaded", () => localTimes(document));
  document.addEventListener("htmx:afterSwap", (e) => localTimes(e.target));

  // Every table scrolls sideways inside its card rather than being cut at its edge; one wider than the card says so
  // (a shadow at the edge and a line under it), on any page and after every resize or swap.
  function markWideTables(root) {
    $$(root, "main table").forEach((table) => {
      let box = table.parentElement;
      if (!box.classList.contains("table-scroll")) {
        box = el("div", { className: "table-scroll" });
        table.replaceWith(box);
        box.append(table);
      }
      const wide = box.scrollWidth > box.clientWidth + 1;
      box.classList.toggle("overflows", wide);
      let hint = box.nextElementSibling;
      if (!(hint && hint.classList.contains("scroll-hint"))) hint = null;
      if (wide && !hint) box.after(el("p", { className: "scroll-hint", textContent: "Scroll sideways for more →" }));
      if (!wide && hint) hint.remove();
    });
  }
  document.addEventListener("DOMContentLoaded", () => {
    markWideTables(document);
    window.addEventListener("resize", () => markWideTables(document));
    setInterval(() => markWideTables(document), 2000);  // tables that scripts fill in (the activity log)
  });
  document.addEventListener("htmx:afterSwap", () => markWideTables(document));

  const config = document.getElementById("live-config");
  const statusEl = document.getElementById("live-status");
  if (!config) return;

  const reports = {}; // "connector/rs" -> last report
  const charts = {}; // "connector/rs" -> {lag: uPlot, eps: uPlot}
  const sparks = {}; // connector -> {plot, data, last}
  const seenErrors = new Set();

  function setStatus(state, text) {
    statusEl.dataset.state = state;
    statusEl.textContent = text;
  }

  // --- binding reports to the page ----------------------------------------------------------------------------
  function bindValue(node, value) {
    const text = node.dataset.fmt && fmt[node.dataset.fmt] ? fmt[node.dataset.fmt](value) : (value ?? "—");
    if (node.dataset.fmt === "connected") node.dataset.value = String(!!value);
    if (node.textContent !== String(text)) {
      node.textContent = text;
      if (node.tagName === "DD") { node.classList.remove("bump"); void node.offsetWidth; node.classList.add("bump"); }
    }
  }

  // The live phase of web/connectors/state.py: a running phase without recent reports is "stale"; a failed or
  // stopped pipeline stays failed or stopped (it does not report either).
  const RUNNING = ["streaming", "snapshot"];
  function phaseOf(report) {
    let p;
    if (report.final) p = report.phase && report.phase !== "streaming" ? report.phase : "stopped";
    else {
      const m = (report.metrics || {}).phase;
      p = m === "starting" ? "streaming" : m === "snapshot-done" ? "stopped" : m || report.phase || "stopped";
    }
    if (!report.stale) return p;
    // stale: the server's stored phase decides (its live phase is "stale" only for a running one)
    const stored = report.phase;
    if (stored && stored !== "stale" && !RUNNING.includes(stored)) return stored;
    return RUNNING.includes(p) || stored === "stale" ? "stale" : p;
  }

  function renderMembers(list, metrics, phase) {
    if (!RUNNING.includes(phase)) {
      // a pipeline that does not run has no view of the replica set: say so instead of "unknown"
      list.replaceChildren(el("li", { className: "muted" },
        phase === "stale" ? "unknown (no recent report)" : `not connected (${phase})`));
      return;
    }
    const members = metrics.Members || [];
    list.replaceChildren(...(members.length ? members.map((host) => {
      const primary = host === metrics.Primary;
      const li = el("li", { className: primary ? "primary" : "" }, host);
      if (primary) li.append(" ", el("span", { className: "tag" }, "primary"));
      return li;
    }) : [el("li", { className: "muted" }, "unknown")]));
  }

  function renderShards(box, status) {
    // a sharded cluster read through mongos (its report's `source`): primaries, elections and migrations as they change
    if (!status || !status.shards) return;
    const body = box.querySelector("tbody");
    if (body) body.replaceChildren(...status.shards.map((shard) => {
      const row = el("tr", {}, el("th", { scope: "row" }, shard.name), el("td", { className: "primary" }, shard.primary || "none"),
        el("td", {}, String((shard.members || []).length)), el("td", { className: "elections" }, String(shard.elections || 0)));
      row.dataset.shard = shard.name;
      return row;
    }));
    const count = box.querySelector("[data-migrations]");
    if (count) count.textContent = String(status.migrations || 0);
  }

  function renderSnapshot(box, snap) {
    if (!snap || !snap.SnapshotKind) return;
    const signature = JSON.stringify([snap.SnapshotRunning, snap.SnapshotPaused, snap.SnapshotCompleted,
      snap.SnapshotAborted, Math.round(snap.SnapshotDurationInSeconds || 0), snap.EstimatedSecondsRemaining, snap.Collections]);
    if (box.dataset.signature === signature) return;
    box.dataset.signature = signature;
    // an incremental snapshot paused by pause-snapshot still runs, without reading chunks
    const state = snap.SnapshotRunning ? (snap.SnapshotPaused ? "paused" : "running")
      : snap.SnapshotCompleted ? "completed" : snap.SnapshotAborted ? "stopped" : "idle";
    const stateMark = el("span", {}, state);
    stateMark.dataset.snapshotState = state;
    let after = ` · ${fmt.seconds(snap.SnapshotDurationInSeconds)}`;
    if (snap.SnapshotRunning) after += ` · ${fmt.seconds(snap.EstimatedSecondsRemaining)} left`;
    const rows = Object.entries(snap.Collections || {}).sort().map(([ns, c]) => {
      // a completed snapshot read everything, whatever the estimate said (an empty table's is 0)
      const pct = snap.SnapshotCompleted ? 100
        : c.chunks_total > 0 ? Math.min(100, Math.floor((100 * c.chunks_done) / c.chunks_total))
        : c.estimated_rows > 0 ? Math.min(100, Math.floor((100 * c.rows) / c.estimated_rows)) : 0;
      const bar = el("progress", { max: 100, value: pct }, pct + " %");
      bar.setAttribute("aria-label", "Snapshot progress of " + ns);
      const tr = el("tr", {},
        el("th", { scope: "row" }, ns),
        el("td", {}, bar, " ", el("span", { className: "pct" }, pct + " %")),
        el("td", { className: "num" }, !snap.SnapshotCompleted ? `${fmt.count(c.rows)} / ~${fmt.count(c.estimated_rows)}`
          : c.rows ? fmt.count(c.rows) : "empty"),
        el("td", { className: "num" }, `${c.chunks_done} / ${c.chunks_total}`));
      tr.dataset.collection = ns;
      return tr;
    });
    const labels = (box.closest("[data-rs]") || box).dataset;  // the source's words (web/dashboard/vocabulary.py)
    const head = el("tr", {}, ...[labels.collectionLabel || "Collection", "Progress", labels.rowsLabel || "Documents",
      "Chunks"].map((h, i) =>
      el("th", { scope: "col", className: i > 1 ? "num" : "" }, h)));
    box.replaceChildren(
      el("h3", {}, "Snapshot ", el("span", { className: "muted small" }, `${snap.SnapshotKind} · `, stateMark, after)),
      el("table", { className: "progress-table" }, el("thead", {}, head), el("tbody", {}, ...rows)));
  }

  function renderLastEvent(p, metrics) {
    const ev = metrics.LastEvent;
    if (!ev) return;
    const parts = [el("code", {}, ev.op || "?"), " " + (ev.ns || "")];
    const data = ((metrics.SourceEventPosition || {}).resume_token || {})._data;
    if (typeof data === "string" && data.startsWith("82") && data.length >= 18) {
      const t = parseInt(data.slice(2, 10), 16), i = parseInt(data.slice(10, 18), 16);
      parts.push(" · cluster time ", el("time", { dateTime: new Date(t * 1000).toISOString() },
        fmt.datetime(t * 1000)), ` (${t}, ${i})`);
    }
    p.replaceChildren(...parts);
  }

  function addError(rs, message) {
    const list = document.getElementById("errors");
    if (!list || !message || seenErrors.has(rs + message)) return;
    seenErrors.add(rs + message);
    if ($$(list, ".msg").some((m) => m.textContent === message)) return;
    list.prepend(el("li", {}, el("time", { dateTime: new Date().toISOString() }, fmt.datetime(Date.now())), " ", el("strong", {}, rs), " ",
      el("span", { className: "msg" }, message)));
    const none = document.getElementById("no-errors");
    if (none) none.hidden = true;
  }

  function applyReport(report) {
    if (!report || !report.connector) return;
    const key = report.connector + "/" + report.replica_set;
    reports[key] = report;
    const metrics = report.metrics || {};
    const boxes = $$(document, `[data-rs="${CSS.escape(key)}"]`);
    if (!boxes.length && config.dataset.cards && config.dataset.connector === report.connector) addCard(key, report);
    boxes.forEach((box) => {
      $$(box, "[data-bind]").forEach((node) => {
        const bind = node.dataset.bind;
        if (bind === "phase") { const p = phaseOf(report); node.textContent = p; node.dataset.status = p; }
        else if (bind === "worker") node.textContent = report.worker || "—";
        else if (bind === "metrics.Connected") {
          // a stopped, failed or stale pipeline has no open change stream, whatever its last report said
          bindValue(node, !!metrics.Connected && ["streaming", "snapshot"].includes(phaseOf(report)));
        }
        else if (bind === "members") renderMembers(node, metrics, phaseOf(report));
        else if (bind === "snapshot") renderSnapshot(node, report.snapshot);
        else if (bind === "shards") renderShards(node, report.source);
        else if (bind === "last_event") renderLastEvent(node, metrics);
        else if (bind === "queue" || bind === "queue_text") {
          const total = metrics.QueueTotalCapacity || 0;
          const pct = total > 0 ? Math.round((100 * (total - (metrics.QueueRemainingCapacity || 0))) / total) : null;
          if (bind === "queue") node.value = pct || 0;
          else node.textContent = pct === null ? "—" : `${pct} % of ${fmt.count(total)}`;
        } else if (bind.includes(".")) bindValue(node, pick(report, bind));
      });
    });
    [metrics.LastError, (report.snapshot || {}).LastError, report.last_error].forEach((e) => addError(report.replica_set, e));
    appendChartPoint(key, metrics);
    updateConnector(report.connector);
  }

  const pendingCards = new Set();
  async function addCard(key, report) {
    // a replica set that started reporting after the page was rendered: fetch its card from the server
    if (pendingCards.has(key)) return;
    pendingCards.add(key);
    try {
      const response = await fetch(config.dataset.cards + encodeURIComponent(report.replica_set) + "/",
        { credentials: "same-origin" });
      if (response.status !== 200) throw new Error("HTTP " + response.status);
      const template = document.createElement("template");
      template.innerHTML = (await response.text()).trim();
      if (document.querySelector(`[data-rs="${CSS.escape(key)}"]`)) return;
      const holder = document.getElementById("replica-sets");
      holder.append(template.content);
      const none = document.getElementById("no-replica-sets");
      if (none) none.remove();
      localTimes(holder);
      await loadHistory();
      applyReport(reports[key]);
    } catch (e) {
      pendingCards.delete(key); // the next report tries again
    }
  }

  // the same rule as observed.connector_status (Python)
  const desiredOf = {};
  function statusOf(desired, phases) {
    const active = phases.some((p) => p === "snapshot" || p === "streaming");
    if (desired === "paused") return active ? "pausing" : "paused";
    if (desired === "stopped") return active ? "stopping" : "stopped";
    if (phases.includes("failed")) return "failed";
    if (phases.includes("snapshot")) return "snapshot";
    if (phases.length && phases.every((p) => p === "streaming")) return "running";
    if (phases.includes("stale")) return "stale";
    return "starting";
  }

  function updateConnector(name) {
    const mine = Object.values(reports).filter((r) => r.connector === name);
    if (desiredOf[name]) setDesired(name, desiredOf[name], statusOf(desiredOf[name], mine.map(phaseOf)));
    const live = mine.filter((r) => !r.final && !r.stale);
    const sum = (list, f) => list.reduce((a, r) => a + ((r.metrics || {})[f] || 0), 0);
    const lags = live.map((r) => (r.metrics || {}).MilliSecondsBehindSource).filter((v) => v !== null && v !== undefined);
    const values = {
      eps: fmt.rate(sum(live, "EventsPerSecond")),
      events: fmt.count(sum(mine, "TotalNumberOfEventsSeen")),
      lag: fmt.ms(lags.length ? Math.max(...lags) : null),
    };
    const errors = mine.map((r) => r.last_error || (r.metrics || {}).LastError).filter(Boolean);
    $$(document, `tr[data-connector="${CSS.escape(name)}"]`).forEach((row) => {
      Object.entries(values).forEach(([bind, text]) => $$(row, `[data-bind="${bind}"]`).forEach((n) => bindValue(n, text)));
      if (errors.length) $$(row, '[data-bind="error"]').forEach((n) => { n.textContent = errors[0].slice(0, 140); n.title = errors[0]; });
      $$(row, '[data-bind="replica_sets"]').forEach((cell) => {
        cell.replaceChildren(...mine.sort((a, b) => a.replica_set.localeCompare(b.replica_set)).map((r) => {
          const p = phaseOf(r);
          const span = el("span", { className: "phase" }, `${r.replica_set}: ${p}`);
          span.dataset.status = p;
          if (r.worker && !r.final) span.append(" ", el("span", { className: "muted small", title: "the worker running it" }, `on ${r.worker}`));
          return span;
        }));
      });
    });
    updateSpark(name, live.reduce((a, r) => a + ((r.metrics || {}).EventsPerSecond || 0), 0));
  }

  function setDesired(name, desired, status) {
    $$(document, `[data-connector="${CSS.escape(name)}"]`).forEach((box) => {
      $$(box, '[data-bind="status"]').forEach((b) => { b.textContent = status; b.dataset.status = status; });
      $$(box, '[data-bind="desired"]').forEach((b) => { b.textContent = desired; });
    });
    if (config.dataset.connector === name) {
      $$(document, "form[data-show]").forEach((f) => { f.hidden = !f.dataset.show.split(" ").includes(desired); });
    }
  }

  function applySummary(summary) {
    Object.entries(summary).forEach(([name, s]) => {
      desiredOf[name] = s.desired_state;
      Object.entries(s.replica_sets || {}).forEach(([rs, o]) => {
        const key = name + "/" + rs;
        if (reports[key]) {
          reports[key].stale = o.stale;
          if (o.stale || o.phase === "stopped" || o.phase === "failed") { reports[key].final = true; reports[key].phase = o.phase; }
          reports[key].last_error = o.last_error;
        }
        addError(rs, o.last_error);
        $$(document, `[data-rs="${CSS.escape(key)}"] [data-bind="phase"]`).forEach((b) => {
          const p = reports[key] ? phaseOf(reports[key]) : o.phase;
          b.textContent = p; b.dataset.status = p;
        });
      });
      if (Object.values(reports).some((r) => r.connector === name)) updateConnector(name);
      else setDesired(name, s.desired_state, s.status);
    });
    if (config.dataset.page === "overview") {
      const rows = $$(document, "tr[data-connector]").map((r) => r.dataset.connector).sort().join();
      if (rows !== Object.keys(summary).sort().join()) showChanged();
    }
  }

  function showChanged() {
    const note = document.getElementById("list-changed");
    if (note) note.hidden = false;
  }

  // --- charts -------------------------------------------------------------------------------------------------
  const HOUR = 3600;
  const MIN_SPAN = 120; // seconds: a chart with one point (or a few) still shows a readable stretch of time

  const GAP = 20; // seconds without a report (a pipeline reports every second or two): the line breaks there

  // The x range: what the data covers, but never less than MIN_SPAN ending at the newest point (or now). Read from
  // the data itself: for a single point uPlot's own guess spans years (a new connector's first report).
  function timeRange(u) {
    const xs = u.data[0];
    const end = xs.length ? xs[xs.length - 1] : Date.now() / 1000;
    const start = xs.length ? Math.min(xs[0], end - MIN_SPAN) : end - MIN_SPAN;
    return [start, end];
  }

  // The series with a null point after each silence longer than GAP, so the line is not drawn across it.
  function withGaps(ts, ys) {
    const xs = [], vs = [];
    ts.forEach((t, i) => {
      if (i && t - ts[i - 1] > GAP) { xs.push(ts[i - 1] + 1); vs.push(null); }
      xs.push(t); vs.push(ys[i]);
    });
    return [xs, vs];
  }

  function chartOptions(width, label, color) {
    return {
      width, height: 150, legend: { show: false }, cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true, range: timeRange },
                y: { range: (u, min, max) => [0, Math.max(1, (max || 0) * 1.15)] } },
      axes: [timeAxis, { stroke: "#5b6775", grid: { stroke: "#eef1f4" }, size: 55 }],
      series: [{}, { label, stroke: color, fill: color + "22", width: 1.5, spanGaps: false }],
    };
  }

  function makePlot(node, label, color, data) {
    if (typeof uPlot === "undefined") return null;
    const plot = new uPlot(chartOptions(Math.max(200, node.clientWidth), label, color), data, node);
    new ResizeObserver(() => plot.setSize({ width: Math.max(200, node.clientWidth), height: 150 })).observe(node);
    return plot;
  }

  async function loadHistory() {
    if (!config.dataset.history) return;
    let history = {};
    try {
      const response = await fetch(config.dataset.history, { credentials: "same-origin" });
      if (response.ok) history = await response.json();
    } catch (e) { return; }
    $$(document, "[data-rs]").forEach((box) => {
      const key = box.dataset.rs, rs = key.slice(key.indexOf("/") + 1);
      const h = history[rs] || { t: [], lag: [], eps: [] };
      const lagNode = box.querySelector('[data-chart="lag"]'), epsNode = box.querySelector('[data-chart="eps"]');
      // Each chart owns its arrays: push() appends to them, and a shared x array would grow once per report for
      // two charts, so the second chart's push would find its newest time already there and drop every point.
      if (charts[key]) {
        charts[key].lag.setData(withGaps(h.t, h.lag));
        charts[key].eps.setData(withGaps(h.t, h.eps));
        return;
      }
      const lag = lagNode && makePlot(lagNode, "Lag (ms)", "#9a5b00", withGaps(h.t, h.lag));
      const eps = epsNode && makePlot(epsNode, "Events/s", "#1f5fae", withGaps(h.t, h.eps));
      if (lag && eps) charts[key] = { lag, eps };
    });
  }

  function push(plot, t, value) {
    const [xs, ys] = plot.data;
    if (xs.length && xs[xs.length - 1] >= t) return;
    if (xs.length && t - xs[xs.length - 1] > GAP) { xs.push(xs[xs.length - 1] + 1); ys.push(null); }
    xs.push(t); ys.push(value);
    while (xs.length && xs[0] < t - HOUR) { xs.shift(); ys.shift(); }
    plot.setData([xs, ys]);
  }

  function appendChartPoint(key, metrics) {
    const c = charts[key];
    if (!c) return;
    const t = Math.floor(Date.now() / 1000);
    push(c.lag, t, metrics.MilliSecondsBehindSource ?? null);
    push(c.eps, t, metrics.EventsPerSecond ?? null);
  }

  function initSparks() {
    const source = document.getElementById("sparklines");
    if (!source || typeof uPlot === "undefined") return;
    const series = JSON.parse(source.textContent);
    $$(document, "[data-spark]").forEach((node) => {
      const s = series[node.dataset.spark] || { t: [], eps: [] };
      const plot = new uPlot({
        width: node.clientWidth || 160, height: 34, legend: { show: false }, cursor: { show: false },
        scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
        axes: [{ show: false }, { show: false }], padding: [2, 0, 2, 0],
        series: [{}, { stroke: "#1f5fae", fill: "#1f5fae22", width: 1, points: { show: false } }],
      }, withGaps(s.t, s.eps), node);
      sparks[node.dataset.spark] = { plot, last: 0 };
    });
  }

  function updateSpark(name, eps) {
    const spark = sparks[name];
    const t = Math.floor(Date.now() / 1000);
    if (!spark || t - spark.last < 5) return;
    spark.last = t;
    const [xs, ys] = spark.plot.data;
    if (xs.length && t - xs[xs.length - 1] > GAP) { xs.push(xs[xs.length - 1] + 1); ys.push(null); }
    xs.push(t); ys.push(eps);
    while (xs.length && xs[0] < t - 900) { xs.shift(); ys.shift(); }
    spark.plot.setData([xs, ys]);
  }

  // --- the socket ---------------------------------------------------------------------------------------------
  let socket = null, attempt = 0, retryTimer = null, everOpened = false;

  function connect() {
    clearInterval(retryTimer);
    setStatus("connecting", attempt ? "Reconnecting…" : "Connecting…");
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const ws = new WebSocket(scheme + location.host + config.dataset.ws);
    socket = ws;
    ws.onopen = () => {
      if (everOpened) loadHistory();
      everOpened = true;
      attempt = 0;
      setStatus("live", "Live");
    };
    ws.onmessage = (event) => {
      let message;
      try { message = JSON.parse(event.data); } catch (e) { return; }
      if (message.type === "metrics") applyReport(message.state);
      else if (message.type === "hello") (message.states || []).forEach(applyReport);
      else if (message.type === "connectors") applySummary(message.connectors || {});
    };
    ws.onclose = () => {
      if (socket !== ws) return;
      socket = null;
      attempt += 1;
      let wait = Math.round(Math.min(30, 2 ** (attempt - 1)) * (0.8 + Math.random() * 0.4));
      setStatus("down", `Disconnected: live updates paused, reconnecting in ${wait} s`);
      retryTimer = setInterval(() => {
        wait -= 1;
        if (wait <= 0) connect();
        else setStatus("down", `Disconnected: live updates paused, reconnecting in ${wait} s`);
      }, 1000);
    };
  }

  window.cdcLive = {
    charts,
    withGaps,
    close() { if (socket) socket.close(); },
    get state() { return statusEl.dataset.state; },
    reports,
  };
  document.addEventListener("cdc:action", (event) => {
    const data = event.detail.data || {};
    if (data.name && data.desired_state && ["pause", "resume", "stop"].includes(data.requested)) {
      desiredOf[data.name] = data.desired_state;
      updateConnector(data.name);
    }
  });
  document.addEventListener("DOMContentLoaded", () => {
    initSparks();
    loadHistory();
    connect();
  });
})();
