// Live validation of the connector form through the REST API's validate action (docs/dashboard.md). The form is
// translated to the API body exactly as web/dashboard/forms.py does on submit; problems come back per Debezium
// property and are shown next to the field carrying it (only for fields the user has touched, until a submit).
(function () {
  "use strict";
  const form = document.querySelector("form[data-validate]");
  if (!form) return;
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const edit = form.dataset.mode === "edit";
  const other = form.querySelector("[data-other]");
  const MASK = "********";
  const HASH = "field.mask.hash.";
  // key=value lines (as forms.parse_other); the lines that are not are problems of their own, shown with the
  // server's answer instead of hiding it
  const otherLines = (text) => {
    const found = {}, bad = [];
    text.split("\n").forEach((raw, index) => {
      const line = raw.trim();
      if (!line || line.startsWith("#")) return;
      const at = line.indexOf("=");
      if (at > 0 && line.slice(0, at).trim()) found[line.slice(0, at).trim()] = line.slice(at + 1).trim();
      else bad.push(`line ${index + 1}: expected key=value, got "${line}"`);
    });
    return { found, bad };
  };
  const parseOther = (text) => otherLines(text).found;
  const initialOther = Object.keys(parseOther(other ? other.value : ""));
  const touched = new Set();
  const fieldOf = (node) => node.closest("[data-field]").dataset.field;
  const managed = {};
  form.querySelectorAll("[data-property]").forEach((node) => { managed[node.dataset.property] = fieldOf(node); });
  managed["mongodb.name"] = "topic_prefix";
  const hashFields = form.querySelector('[data-hash="fields"]');
  const initialHashKey = hashFields ? hashFields.dataset.initialKey : "";

  function body() {
    const value = (name) => (form.elements[name] ? form.elements[name].value : "");
    const config = {};
    const extra = parseOther(other ? other.value : "");
    Object.entries(extra).forEach(([k, v]) => { if (!(k in managed) && k !== initialHashKey) config[k] = v; });
    if (edit) initialOther.forEach((k) => { if (!(k in extra) && !(k in managed)) config[k] = null; });
    config["snapshot.mode"] = value("snapshot_mode") || "initial";
    form.querySelectorAll("[data-value]").forEach((input) => {
      const prop = input.dataset.property; // the field, or else the same property written in Other properties
      const given = input.value.trim() || extra[prop] || "";
      if (given) config[prop] = given;
      else if (edit) config[prop] = null;
    });
    if (hashFields) {
      const items = hashFields.value.split("\n").map((s) => s.trim()).filter(Boolean);
      const key = HASH + value("hash_algorithm") + ".with.salt." + (value("hash_salt") || MASK);
      if (edit && initialHashKey && (key !== initialHashKey || !items.length)) config[initialHashKey] = null;
      if (items.length) config[key] = items.join(",");
    }
    form.querySelectorAll("textarea[data-list]").forEach((area) => {
      const items = area.value.split("\n").map((s) => s.trim()).filter(Boolean);
      if (items.length) config[area.dataset.property] = items;
      else if (edit) config[area.dataset.property] = null;
    });
    const ops = Array.from(form.querySelectorAll('[data-property="skipped.operations"] input:checked')).map((i) => i.value);
    if (ops.length) config["skipped.operations"] = ops;
    else if (edit) config["skipped.operations"] = null;
    const result = { topic_prefix: value("topic_prefix"), connection_string: value("connection_string"), config };
    if (!edit) result.name = value("name");
    if (value("password")) result.password = value("password");
    return result;
  }

  function show(field, messages) {
    const list = document.getElementById("err-" + field);
    const box = form.querySelector(`[data-field="${field}"]`);
    if (!list || !box) return;
    list.replaceChildren(...messages.map((m) => Object.assign(document.createElement("li"), { textContent: m })));
    box.classList.toggle("invalid", messages.length > 0);
    box.querySelectorAll("input:not([type=checkbox]), textarea, select").forEach((input) => {
      if (messages.length) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
      const ids = new Set((input.getAttribute("aria-describedby") || "").split(" ").filter(Boolean));
      ids.add("err-" + field);
      if (document.getElementById("help-" + field)) ids.add("help-" + field);
      input.setAttribute("aria-describedby", Array.from(ids).join(" "));
    });
  }

  const refreshPreview = window.cdcTablePreview ? window.cdcTablePreview(form, body) : () => {};
  let seq = 0, timer = null;
  async function validate(all) {
    const mine = ++seq;
    const state = document.getElementById("validation-state");
    const sent = body();  // what a valid answer is about: the preview lists this, not the form as it is by then
    const depends = JSON.stringify(["connection_string", "password", "database_include", "database_exclude",
      "collection_include", "collection_exclude", "signal_collection"].map((n) => (form.elements[n] || {}).value));
    let result;
    try {
      const response = await fetch(form.dataset.validate, {
        method: "POST", credentials: "same-origin", body: JSON.stringify(sent),
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf },
      });
      if (!response.ok) { state.textContent = `Live validation unavailable (HTTP ${response.status}).`; return; }
      result = await response.json();
    } catch (e) {
      state.textContent = "Live validation unavailable: " + e.message;
      return;
    }
    if (mine !== seq) return; // an older answer
    const byField = {};
    const general = [];
    if (other) otherLines(other.value).bad.forEach((message) => (byField.other = byField.other || []).push(message));
    (result.problems || []).forEach((p) => {
      let field = managed[p.property];
      if (!field && p.property.startsWith("skipped.operations")) field = "skipped_operations";
      if (!field && p.property.startsWith(HASH) && hashFields && hashFields.value.trim()) field = "hash_fields";
      if (!field && p.property) field = "other";
      if (field) (byField[field] = byField[field] || []).push(p.message);
      else general.push(p.message);
    });
    form.querySelectorAll("[data-field]").forEach((box) => {
      const field = box.dataset.field;
      if (all || touched.has(field)) show(field, byField[field] || []);
    });
    const shownCount = Object.entries(byField).filter(([f]) => all || touched.has(f)).length;
    const count = Object.values(byField).reduce((a, m) => a + m.length, 0) + general.length;
    const hidden = count - general.length - Object.entries(byField)
      .filter(([f]) => all || touched.has(f)).reduce((a, [, m]) => a + m.length, 0);
    if (!count) refreshPreview(depends, sent);  // the collections its lists capture (connects only when these changed)
    state.textContent = !count ? "The configuration is valid."
      : `${count} problem${count === 1 ? "" : "s"}` +
        (hidden > 0 && !shownCount ? " in fields not filled in yet." : ".");
    const box = document.getElementById("err-general");
    if (all || general.length) box.replaceChildren(...general.map((m) => Object.assign(document.createElement("p"), { textContent: m })));
    if (result.retry_after_s) {  // the server did not check the connection now: ask again when it will
      state.textContent += ` Checking again in ${result.retry_after_s} s.`;
      clearTimeout(timer);
      timer = setTimeout(() => validate(all), result.retry_after_s * 1000);
    }
  }

  form.addEventListener("input", (event) => {
    if (!event.target.closest("[data-field]")) return;
    touched.add(fieldOf(event.target));
    clearTimeout(timer);
    timer = setTimeout(() => validate(false), 350);
  });
  form.addEventListener("change", (event) => {
    if (!event.target.closest("[data-field]")) return;
    touched.add(fieldOf(event.target));
    clearTimeout(timer);
    timer = setTimeout(() => validate(false), 100);
  });
  if (edit) validate(false);
})();
