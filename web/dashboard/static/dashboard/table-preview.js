// The connector forms' table preview (docs/dashboard.md): the form's API body goes to the tables action, which lists
// the source's tables (collections) and marks those the include/exclude lists capture; the connector's own filters
// decide, on the server. window.cdcTablePreview(form, body) -> refresh(depends, sent): lists again when `depends`
// (the values the answer depends on) changed since the last listing, or always when it is omitted. `sent` is the body
// the live check found valid: the form may have changed while the check was answered, and a listing of that newer,
// unchecked body would be refused.
(function () {
  "use strict";
  window.cdcTablePreview = function (form, body) {
    const list = document.getElementById("table-preview-list");
    const state = document.getElementById("table-preview-state");
    const button = document.getElementById("table-preview-button");
    if (!list || !form.dataset.preview) return () => {};
    const csrf = document.querySelector('meta[name="csrf-token"]').content;
    const noun = list.dataset.noun || "table";
    let seq = 0, listed = null;

    async function preview(sent) {
      const mine = ++seq;
      state.textContent = `Listing the source's ${noun}s…`;
      let response, result;
      try {
        response = await fetch(form.dataset.preview, {
          method: "POST", credentials: "same-origin", body: JSON.stringify(sent || body()),
          headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf },
        });
        result = await response.json().catch(() => ({}));
      } catch (e) {
        state.textContent = "No preview: " + e.message;
        return;
      }
      if (mine !== seq) return;  // an older answer
      if (response.status === 429 && result.retry_after_s) {  // not listed now: the last listing stays meanwhile
        state.textContent = `No new listing yet (${result.detail}): listing again in ${result.retry_after_s} s.`;
        setTimeout(() => { if (mine === seq) preview(sent); }, result.retry_after_s * 1000);
        return;
      }
      if (!response.ok) {
        const first = (result.problems || [])[0];
        state.textContent = "No preview yet: " + (first ? first.message : result.detail || `HTTP ${response.status}`);
        list.replaceChildren();
        return;
      }
      list.replaceChildren(...result.tables.map((table) => {
        const li = document.createElement("li");
        li.dataset.table = table.name;
        li.dataset.captured = String(table.captured);
        li.className = table.captured ? "captured" : "muted";
        li.textContent = (table.captured ? "✓ " : "– ") + table.name;
        return li;
      }));
      state.textContent = `${result.captured} of ${result.total} ${noun}${result.total === 1 ? "" : "s"} captured` +
        (result.tables.length < result.total ? ` (the first ${result.tables.length} listed).` : ".");
    }
    if (button) button.addEventListener("click", () => preview());
    return (depends, sent) => {
      if (depends !== undefined && depends === listed) return;  // a listing connects: only when it may differ
      listed = depends;
      preview(sent);
    };
  };
})();
