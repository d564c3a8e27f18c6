// Action forms (form[data-api]): pause, resume, restart, stop, ad-hoc snapshot and offset resets are sent as JSON to
// the REST API, which checks the user's role; the page asks for confirmation first and announces the answer.
(function () {
  "use strict";
  const csrf = () => document.querySelector('meta[name="csrf-token"]').content;

  function announce(text, kind) {
    const box = document.getElementById("announce");
    if (!box) return;
    box.textContent = text;
    box.dataset.kind = kind || "ok";
    box.hidden = false;
  }
  window.cdcAnnounce = announce;

  // A form that reloads the page after its answer (data-reload) keeps the answer across the reload.
  const KEPT = "cdc-announce";
  document.addEventListener("DOMContentLoaded", () => {
    const kept = sessionStorage.getItem(KEPT);
    if (!kept) return;
    sessionStorage.removeItem(KEPT);
    try { const { text, kind } = JSON.parse(kept); announce(text, kind); } catch (e) { /* ignore */ }
  });

  function bodyOf(form) {
    const body = {};
    const lists = (form.dataset.list || "").split(" ").filter(Boolean);
    for (const input of form.elements) {
      if (!input.name || input.name === "csrfmiddlewaretoken" || input.disabled) continue;
      let value = input.type === "checkbox" ? input.checked : input.value.trim();
      if (input.dataset.optional && value === "") continue;
      if (lists.includes(input.name)) value = value.split(/[\s,]+/).filter(Boolean);
      else if (input.name === "replica_sets") value = [value];
      else if (input.dataset.json) value = JSON.parse(value);
      body[input.name] = value;
    }
    return body;
  }

  function problem(data, status) {
    if (data.detail) return data.detail;
    const parts = Object.entries(data).map(([k, v]) => `${k}: ${[].concat(v).join(" ")}`);
    return parts.join("; ") || `HTTP ${status}`;
  }

  // Copy buttons (button[data-copy="<selector>"]): the element's text to the clipboard.
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
    const source = document.querySelector(button.dataset.copy);
    if (!source) return;
    try {
      await navigator.clipboard.writeText(source.textContent.trim());
      announce("Copied to the clipboard.", "ok");
    } catch (e) {
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      announce("Selected: press Ctrl+C to copy (" + e.message + ").", "error");
    }
  });

  document.addEventListener("submit", async (event) => {
    const form = event.target.closest("form[data-api]");
    if (!form) return;
    event.preventDefault();
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
    let body;
    try { body = bodyOf(form); } catch (e) { announce("Not valid JSON: " + e.message, "error"); return; }
    const buttons = Array.from(form.querySelectorAll("button"));
    buttons.forEach((b) => { b.disabled = true; });
    try {
      const response = await fetch(form.dataset.api, {
        method: "POST", credentials: "same-origin", body: JSON.stringify(body),
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf(),
                   "X-CDC-Source": "dashboard" },
      });
      const data = await response.json().catch(() => ({}));
      if (!response.ok) { announce("Refused: " + problem(data, response.status), "error"); return; }
      let text;
      if (data.offsets && body.mode) {
        const where = data.offsets.map((o) => o.replica_set).join(", ") || "every replica set";
        text = `Offsets of ${data.name} reset (${body.mode}) for ${where}. The pipeline applies the reset when ` +
          "it starts: press Resume to start it.";
      } else {
        const what = data.requested ? `${data.requested} requested` : data.request ? `snapshot ${data.request} requested`
          : "done";
        text = `${data.name || ""} ${what}.`.trim();
      }
      // A reloading form's answer is shown by the reloaded page, whose buttons are the ones it speaks of ("press
      // Resume"); the page before the reload may not have them.
      if (form.dataset.reload) sessionStorage.setItem(KEPT, JSON.stringify({ text, kind: "ok" }));
      announce(form.dataset.reload ? "Done: reloading the page…" : text, "ok");
      document.dispatchEvent(new CustomEvent("cdc:action", { detail: { form, data } }));
      if (form.dataset.reload) location.reload();
    } catch (e) {
      announce("The request failed: " + e.message, "error");
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  });
})();
