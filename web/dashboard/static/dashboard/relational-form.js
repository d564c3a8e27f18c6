// Live checks of the PostgreSQL / MySQL / MariaDB connector form while typing: the form becomes the REST API's body
// as web/dashboard/relational_form.py's api_body builds it, goes to the validate action (which also connects to the
// server: a wrong password or an unknown database is said at once), and each problem is shown next to the field
// carrying its property, for fields the user has touched.
(function () {
  "use strict";
  const form = document.querySelector("form[data-validate]");
  const specNode = document.getElementById("live-check");
  if (!form || !specNode) return;
  const spec = JSON.parse(specNode.textContent);
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const edit = form.dataset.mode === "edit";
  const state = document.getElementById("validation-state");
  const managed = {};  // property -> field
  Object.entries(spec.fields).forEach(([field, prop]) => { managed[prop] = field; });
  Object.assign(managed, { name: "name", "topic.prefix": "topic_prefix", "database.password": "password" });
  const touched = new Set();
  const value = (name) => (form.elements[name] ? String(form.elements[name].value).trim() : "");

  function otherLines() {
    const found = {}, bad = [];
    value("other").split("\n").forEach((raw, index) => {
      const line = raw.trim();
      if (!line || line.startsWith("#")) return;
      const at = line.indexOf("=");
      if (at > 0) found[line.slice(0, at).trim()] = line.slice(at + 1).trim();
      else bad.push(`line ${index + 1}: expected key=value, got "${line}"`);
    });
    return { found, bad };
  }

  function body() {
    const config = {};
    Object.entries(otherLines().found).forEach(([k, v]) => {
      if (!(k in managed) && k !== "connector.class") config[k] = v;
    });
    config["connector.class"] = spec.connector_class;
    Object.entries(spec.fields).forEach(([field, prop]) => {
      const given = value(field);
      if (spec.lists.includes(field)) {
        const items = given.split("\n").map((s) => s.trim()).filter(Boolean);
        if (items.length) config[prop] = items;
        else if (edit) config[prop] = null;
      } else if (given) config[prop] = given;
      else if (edit) config[prop] = null;
    });
    const result = { topic_prefix: value("topic_prefix"), config };
    if (!edit) result.name = value("name");
    if (value("password")) result.password = form.elements.password.value;
    return result;
  }

  function show(field, messages) {
    const box = form.querySelector(`[data-field="${field}"]`);
    const list = document.getElementById("err-" + field);
    if (!box || !list) return;
    list.replaceChildren(...messages.map((m) => Object.assign(document.createElement("li"), { textContent: m })));
    box.classList.toggle("invalid", messages.length > 0);
    box.querySelectorAll("input, textarea, select").forEach((input) => {
      if (messages.length) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
    });
  }

  let seq = 0, timer = null;
  async function validate() {
    const mine = ++seq;
    state.textContent = "Checking…";
    const sent = body();  // what a valid answer is about: the preview lists this, not the form as it is by then
    // a preview connects, and shares the user's rate of connection checks: only when what it depends on changed
    const depends = JSON.stringify(["hostname", "port", "user", "password", "dbname", "schema_include",
      "database_include", "table_include", "table_exclude", "signal_collection"].map(value));
    let result;
    try {
      const response = await fetch(form.dataset.validate, {
        method: "POST", credentials: "same-origin", body: JSON.stringify(sent),
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf },
      });
      if (!response.ok) { state.textContent = `Live checks unavailable (HTTP ${response.status}).`; return; }
      result = await response.json();
    } catch (e) {
      state.textContent = "Live checks unavailable: " + e.message;
      return;
    }
    if (mine !== seq) return;  // an older answer
    const byField = {};
    otherLines().bad.forEach((m) => (byField.other = byField.other || []).push(m));
    (result.problems || []).forEach((p) => {
      const field = managed[p.property] || (p.property ? "other" : "general");
      (byField[field] = byField[field] || []).push(p.message);
    });
    let shown = 0, count = 0;
    Object.values(byField).forEach((m) => { count += m.length; });
    form.querySelectorAll("[data-field]").forEach((box) => {
      const field = box.dataset.field;
      if (!touched.has(field)) return;
      show(field, byField[field] || []);
      shown += (byField[field] || []).length;
    });
    if (!count) refreshPreview(depends, sent);  // a valid configuration whose server answered
    state.textContent = !count ? "The configuration is valid and the server answered."
      : `${count} problem${count === 1 ? "" : "s"}` + (shown < count ? " (some in fields not filled in yet)." : ".");
    if (result.retry_after_s) {  // the server did not check the connection now: ask again when it will
      state.textContent += ` Checking again in ${result.retry_after_s} s.`;
      clearTimeout(timer);
      timer = setTimeout(validate, result.retry_after_s * 1000);
    }
  }

  const refreshPreview = window.cdcTablePreview ? window.cdcTablePreview(form, body) : () => {};

  function later(event, wait) {
    const box = event.target.closest("[data-field]");
    if (!box) return;
    touched.add(box.dataset.field);
    clearTimeout(timer);
    timer = setTimeout(validate, wait);
  }
  form.addEventListener("input", (event) => later(event, 600));
  form.addEventListener("change", (event) => later(event, 150));
})();
