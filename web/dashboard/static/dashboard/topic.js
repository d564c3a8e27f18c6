// Topic browser: the live tail (WebSocket /ws/topics/<topic>/ with the form's partition and search) and the
// message table (a row expands on click; Download buttons). Messages are built with textContent only: nothing
// from Kafka becomes markup.
(function () {
  "use strict";
  const MAX_SHOWN = 500;

  function download(button) {
    const source = document.querySelector(button.dataset.download);
    if (!source) return;
    const blob = new Blob([source.textContent], { type: "application/json" });
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = button.dataset.filename || "message.json";
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  }

  // The site's one date format (live.js), in the browser's time zone.
  const when = (ms) => (window.cdcFormat ? window.cdcFormat.datetime(ms) : new Date(ms).toISOString());

  function element(tag, attributes, text) {
    const node = document.createElement(tag);
    Object.entries(attributes || {}).forEach(([name, value]) => node.setAttribute(name, value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // One message: a one-line summary row (partition, offset, time, key, value preview) and its detail row (full key,
  // headers, value, Copy and Download), hidden until the summary row or its button is clicked.
  function messageBody(topic, m) {
    const id = `value-${m.partition}-${m.offset}`;
    const detailId = `detail-${m.partition}-${m.offset}`;
    const body = element("tbody", { class: "message live", "data-partition": m.partition, "data-offset": m.offset });
    const summary = element("tr", { class: "summary" });
    const first = element("td");
    first.appendChild(element("button", { type: "button", class: "expand", "aria-expanded": "false",
      "aria-controls": detailId, "aria-label": `Message ${m.partition}/${m.offset}` }, "▸"));
    first.appendChild(document.createTextNode(` ${m.partition}`));
    summary.appendChild(first);
    summary.appendChild(element("td", { class: "num" }, String(m.offset)));
    const time = element("td");
    time.appendChild(element("time", {}, when(m.timestamp_ms)));
    summary.appendChild(time);
    const keyCell = element("td");
    const key = m.key_text || "(none)";
    keyCell.appendChild(element("code", { class: "key" }, key.length > 120 ? `${key.slice(0, 119)}…` : key));
    summary.appendChild(keyCell);
    const preview = element("td", { class: "preview" });
    preview.appendChild(element("code", {}, m.preview));
    summary.appendChild(preview);
    body.appendChild(summary);

    const detail = element("tr", { class: "detail", id: detailId });
    detail.hidden = true;
    const cell = element("td", { colspan: "5" });
    const meta = element("p", { class: "meta" }, `${m.size} bytes `);
    meta.appendChild(element("button", { type: "button", class: "copy", "data-copy": `#${id}` }, "Copy value"));
    meta.appendChild(element("button", { type: "button", class: "copy", "data-download": `#${id}`,
      "data-filename": `${topic}-${m.partition}-${m.offset}.json` }, "Download"));
    cell.appendChild(meta);
    const fullKey = element("p");
    fullKey.appendChild(element("strong", {}, "Key"));
    fullKey.appendChild(document.createTextNode(" "));
    fullKey.appendChild(element("code", { class: "key-full" }, key));
    cell.appendChild(fullKey);
    if (m.headers.length) {
      const list = element("dl", { class: "headers", "aria-label": `Headers of offset ${m.offset}` });
      m.headers.forEach(([name, value]) => {
        list.appendChild(element("dt", {}, name));
        const dd = element("dd");
        dd.appendChild(element("code", {}, value));
        list.appendChild(dd);
      });
      cell.appendChild(list);
    } else {
      cell.appendChild(element("p", { class: "muted small" }, "No headers."));
    }
    cell.appendChild(element("pre", { class: "json", id, tabindex: "0", "aria-label": `Value of offset ${m.offset}` },
      m.pretty));
    if (m.value_cut) cell.appendChild(element("p", { class: "muted small" }, "The value is cut here (too long to show)."));
    detail.appendChild(cell);
    body.appendChild(detail);
    return body;
  }

  function toggle(body) {
    const button = body.querySelector("button.expand");
    const detail = body.querySelector("tr.detail");
    const open = detail.hidden;
    detail.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    button.textContent = open ? "▾" : "▸";
    body.classList.toggle("open", open);
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-download]");
    if (button) download(button);
    const summary = event.target.closest("table.messages tr.summary");
    // a click that selects text in the row is no toggle
    if (summary && !(window.getSelection && String(window.getSelection()))) toggle(summary.parentElement);
  });

  // A tail cut off (the server restarted, the network or Redis failed) reconnects by itself, after 1, 2, 4 … 15 s,
  // from the offsets after the last messages it showed; the status line says so all along.
  const RETRY_DELAYS_S = [1, 2, 4, 8, 15];

  document.addEventListener("DOMContentLoaded", () => {
    const toggle = document.getElementById("tail-toggle");
    const status = document.getElementById("tail-status");
    const list = document.querySelector("table.messages");
    if (!toggle || !status || !list) return;
    const topic = toggle.dataset.topic;
    let socket = null;
    let retryTimer = null;
    let attempts = 0;
    let received = 0;
    let next = {};  // partition -> the next offset to show

    function say(text, kind) {
      status.textContent = text;
      status.dataset.kind = kind || "ok";
    }

    function following() {
      return socket !== null || retryTimer !== null;
    }

    function stop(text) {
      if (socket) { socket.onclose = null; socket.close(); socket = null; }
      if (retryTimer) { clearTimeout(retryTimer); retryTimer = null; }
      toggle.textContent = "Live tail";
      toggle.setAttribute("aria-pressed", "false");
      if (text) say(text);
    }

    function retryLater(why) {
      if (socket) { socket.onclose = null; socket = null; }
      const delay = RETRY_DELAYS_S[Math.min(attempts, RETRY_DELAYS_S.length - 1)];
      attempts += 1;
      say(`${why} Reconnecting in ${delay} s (attempt ${attempts})…`, "warning");
      retryTimer = setTimeout(() => { retryTimer = null; connect(); }, delay * 1000);
    }

    function connect() {
      const form = document.querySelector("form.filter-form");
      const params = new URLSearchParams();
      ["partition", "q", "f"].forEach((name) => { const field = form.elements[name]; if (field) params.set(name, field.value); });
      form.querySelectorAll('input[name="in"]:checked').forEach((box) => params.append("in", box.value));
      Object.entries(next).forEach(([partition, offset]) => params.append("resume", `${partition}:${offset}`));
      const scheme = location.protocol === "https:" ? "wss:" : "ws:";
      const current = new WebSocket(`${scheme}//${location.host}/ws/topics/${encodeURIComponent(topic)}/?${params}`);
      socket = current;
      window.cdcTail = { socket: current };
      const reconnecting = attempts > 0;
      if (!reconnecting) say("Connecting…");
      current.onmessage = (event) => {
        const data = JSON.parse(event.data);
        if (data.type === "ready") {
          Object.entries(data.positions).forEach(([partition, offset]) => {
            if (!(partition in next)) next[partition] = offset;
          });
          attempts = 0;
          say(reconnecting ? "Reconnected: following the topic again from where the tail was cut off."
            : "Following the topic: new committed messages appear at the top.");
        } else if (data.type === "message") {
          received += 1;
          next[data.partition] = Math.max(next[data.partition] || 0, data.offset + 1);
          list.insertBefore(messageBody(topic, data), list.tBodies[0] || null);
          while (list.tBodies.length > MAX_SHOWN) list.tBodies[list.tBodies.length - 1].remove();
          say(`Following the topic: ${received} new message${received === 1 ? "" : "s"}.`);
        } else if (data.type === "skipped") {
          say(`Following the topic: ${data.count} matching messages in the last second were not shown (over 50/s).`);
        } else if (data.type === "error") {
          if (data.retry) { retryLater(data.message); return; }
          stop();
          say(data.message, "error");
        }
      };
      current.onclose = () => { if (socket === current) retryLater("The live tail lost its connection."); };
    }

    toggle.addEventListener("click", () => {
      if (following()) { stop("Live tail stopped."); return; }
      attempts = 0;
      received = 0;
      next = {};
      toggle.textContent = "Stop tail";
      toggle.setAttribute("aria-pressed", "true");
      connect();
    });
  });
})();
