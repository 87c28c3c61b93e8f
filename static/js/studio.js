// Small enhancements; every page works without this file.

// Ask before leaving a form with unsaved changes ("no edit is ever lost").
document.addEventListener("DOMContentLoaded", () => {
  let dirty = null;
  for (const form of document.querySelectorAll("form[data-guard-unsaved]")) {
    form.addEventListener("input", () => { dirty = form; });
    form.addEventListener("submit", () => { dirty = null; });
  }
  window.addEventListener("beforeunload", (event) => {
    if (dirty) {
      event.preventDefault();
      event.returnValue = "";
    }
  });
});

// Keep shared addresses short: htmx GET requests (whose URL goes into the address bar)
// leave out fields that are empty. Repeated fields (NPC rows) are kept whole, so that
// each NPC stays paired with its tier.
document.addEventListener("htmx:configRequest", (event) => {
  const { verb, formData } = event.detail;
  if (verb !== "get" || !formData) return;
  for (const name of new Set(formData.keys())) {
    const values = formData.getAll(name);
    if (values.length === 1 && values[0] === "") formData.delete(name);
  }
});
