// The detail page's activity log (docs/dashboard.md): /api/connectors/<name>/activity/ every 3 s and after an
// action — requests and how they ended, phase changes, errors and configuration changes, newest first, with time
// and reason, so a person sees why a control action did or did not take effect.
document.addEventListener("DOMContentLoaded", function () {
  "use strict";
  const box = document.getElementById("activity");
  if (!box) return;
  const el = (tag, props, ...children) => {
    const node = Object.assign(document.createElement(tag), props || {});
    children.forEach((c) => node.append(c));
    return node;
  };
  const LABELS = { request: "asked", sent: "sent", received: "taken up", outcome: "ended", state: "state", error: "error",
                   config: "change" };
  let signature = "";

  function render(lines) {
    const next = JSON.stringify(lines);
    if (next === signature) return;
    signature = next;
    if (!lines.length) { box.replaceChildren(el("p", { className: "muted" }, "Nothing yet.")); return; }
    const rows = lines.map((line) => {
      const ms = Date.parse(line.at);
      const when = el("time", { dateTime: line.at, title: new Date(ms).toISOString() + " (UTC)" },
        window.cdcFormat.datetime(ms));
      const kind = el("span", { className: "badge" }, LABELS[line.kind] || line.kind);
      kind.dataset.kind = line.kind;
      if (line.status) kind.dataset.status = line.status;
      const tr = el("tr", {}, el("td", {}, when), el("td", {}, kind), el("td", {}, line.replica_set || "—"),
        el("td", { className: "reason" }, line.text), el("td", { className: "muted" }, line.by || ""));
      tr.dataset.kind = line.kind;
      return tr;
    });
    const head = el("tr", {}, ...["When", "What", box.dataset.partition || "Replica set", "Details", "By"].map((h) => el("th", { scope: "col" }, h)));
    box.replaceChildren(el("table", { className: "requests activity" }, el("thead", {}, head), el("tbody", {}, ...rows)));
  }

  async function load() {
    try {
      const response = await fetch(box.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (response.ok) render(await response.json());
    } catch (e) { /* the next poll tries again */ }
  }
  load();
  setInterval(load, 3000);
  document.addEventListener("cdc:action", () => setTimeout(load, 300));
});
