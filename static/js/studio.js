// Small enhancements; every page works without this file.

// Ask before leaving a form with unsaved changes ("no edit is ever lost"). A form the
// server sent back (a failed save, a conflict: data-dirty) holds unsaved work from the
// start, so the guard is armed at once.
let dirtyForm = null;

function markDirty(form) {
  dirtyForm = form;
}

window.addEventListener("beforeunload", (event) => {
  if (dirtyForm) {
    event.preventDefault();
    event.returnValue = "";
  }
});

// Drafts: the editor keeps what the author typed in local storage, per object and the
// revision it was loaded at, until a save succeeds. Opening the page again offers it back.
const DRAFT_PREFIX = "promptadmin:draft:";

function draftFields(form) {
  return [...form.elements].filter(
    (el) => el.name && !el.disabled && el.type !== "hidden" && el.type !== "submit"
      && el.type !== "button" && el.type !== "radio" && el.name !== "csrfmiddlewaretoken",
  );
}

function readDraft(key) {
  try {
    return JSON.parse(window.localStorage.getItem(DRAFT_PREFIX + key) || "null");
  } catch {
    return null;
  }
}

function saveDraft(form) {
  const key = form.dataset.draftKey;
  if (!key) return;
  const values = {};
  for (const el of draftFields(form)) {
    values[el.name] = el.type === "checkbox" ? el.checked : el.value;
  }
  try {
    window.localStorage.setItem(DRAFT_PREFIX + key, JSON.stringify({ values, at: Date.now() }));
  } catch {
    // Storage full or disabled: the unsaved-changes guard still protects the work.
  }
}

function clearDrafts(prefix) {
  try {
    for (const name of Object.keys(window.localStorage)) {
      if (name.startsWith(DRAFT_PREFIX + prefix)) window.localStorage.removeItem(name);
    }
  } catch {
    // Nothing to clear.
  }
}

function differsFromForm(form, values) {
  return draftFields(form).some((el) => {
    if (!(el.name in values)) return false;
    const now = el.type === "checkbox" ? el.checked : el.value;
    return now !== values[el.name];
  });
}

// The newest draft of this object (any revision) that differs from the form; drafts that
// equal what the form now shows were saved, and are dropped.
function findDraft(form) {
  const key = form.dataset.draftKey;
  if (!key) return null;
  const prefix = key.slice(0, key.lastIndexOf(":") + 1);
  let best = null;
  try {
    for (const name of Object.keys(window.localStorage)) {
      if (!name.startsWith(DRAFT_PREFIX + prefix)) continue;
      const draft = readDraft(name.slice(DRAFT_PREFIX.length));
      if (!draft || !differsFromForm(form, draft.values)) {
        window.localStorage.removeItem(name);
      } else if (!best || draft.at > best.at) {
        best = { ...draft, key: name.slice(DRAFT_PREFIX.length) };
      }
    }
  } catch {
    return null;
  }
  return best;
}

// The revision a draft key names ("segment:12:3" -> "3"; "" for an object not yet saved).
function revisionOf(key) {
  return key.slice(key.lastIndexOf(":") + 1);
}

// A draft made on an older revision is restored onto that revision: the form then posts
// the draft's base as its expected revision, so the save goes through the server's
// three-way merge (their later changes kept, fields both changed shown for a decision)
// instead of writing the draft's copies of their fields back over them.
function restoreDraft(form, draft) {
  const base = revisionOf(draft.key);
  const now = revisionOf(form.dataset.draftKey);
  const expected = form.elements.namedItem("expected_revision");
  if (base !== now && expected) {
    expected.value = base;
    // Typing on keeps the draft under the revision it is based on.
    form.dataset.draftKey = draft.key;
    const note = document.createElement("p");
    note.className = "draft-restored notice";
    note.setAttribute("role", "status");
    note.textContent = `Restored your unsaved changes from revision ${base}. Revision ${now} `
      + `was saved since: when you save, yours are merged with revision ${now}. Their `
      + "changes to fields you did not touch are kept, and any field you both changed is "
      + "shown for you to choose.";
    form.before(note);
  }
  for (const el of draftFields(form)) {
    if (!(el.name in draft.values)) continue;
    if (el.type === "checkbox") el.checked = draft.values[el.name];
    else el.value = draft.values[el.name];
    el.dispatchEvent(new Event("input", { bubbles: true }));
  }
  markDirty(form);
}

function offerDraft(form) {
  const draft = findDraft(form);
  if (!draft) return;
  const key = draft.key;
  const box = document.createElement("div");
  box.className = "draft-offer";
  box.setAttribute("role", "region");
  box.setAttribute("aria-label", "Unsaved draft");
  box.tabIndex = -1;
  const when = new Date(draft.at).toLocaleString();
  const text = document.createElement("p");
  const base = revisionOf(key);
  const older = base !== revisionOf(form.dataset.draftKey)
    ? ` They were made on revision ${base}; restoring them merges them with the latest one.`
    : "";
  text.textContent = `You have unsaved changes to this form from ${when}.${older}`;
  const restore = document.createElement("button");
  restore.type = "button";
  restore.className = "btn btn-primary";
  restore.textContent = "Restore my unsaved changes";
  const discard = document.createElement("button");
  discard.type = "button";
  discard.className = "btn";
  discard.textContent = "Discard them";
  box.append(text, restore, " ", discard);
  form.before(box);
  restore.addEventListener("click", () => {
    restoreDraft(form, draft);
    box.remove();
    const first = draftFields(form)[0];
    if (first) first.focus();
  });
  discard.addEventListener("click", () => {
    if (!window.confirm("Discard your unsaved changes for good?")) return;
    window.localStorage.removeItem(DRAFT_PREFIX + key);
    box.remove();
    form.focus();
  });
  box.focus();
}

const PENDING = "promptadmin:submitted-draft";

// The form submitted last: unless the server sent it back (a failed save, a conflict),
// the save succeeded and its draft is done with.
function settleSubmitted(root) {
  const submitted = window.sessionStorage.getItem(PENDING);
  if (!submitted) return;
  window.sessionStorage.removeItem(PENDING);
  const back = root.querySelector(`form[data-dirty][data-draft-key="${CSS.escape(submitted)}"]`);
  if (!back) window.localStorage.removeItem(DRAFT_PREFIX + submitted);
}

// Forms on a page, or swapped in (the editor beside the preview), get the same care.
function initForms(root) {
  settleSubmitted(root);
  for (const form of root.querySelectorAll("form[data-guard-unsaved]")) {
    if (form.hasAttribute("data-dirty")) {
      markDirty(form);
      saveDraft(form);
    } else {
      offerDraft(form);
    }
  }
  // After a failed save, or a conflict, focus goes to what the author must read first.
  const first = root.querySelector("#error-summary") || root.querySelector("#conflict");
  if (first) {
    first.scrollIntoView({ block: "start" });
    first.focus();
  }
}

document.addEventListener("input", (event) => {
  const form = event.target.closest && event.target.closest("form[data-guard-unsaved]");
  if (!form) return;
  markDirty(form);
  saveDraft(form);
});
document.addEventListener("change", (event) => {
  const form = event.target.closest && event.target.closest("form[data-guard-unsaved]");
  if (form) saveDraft(form);
});
document.addEventListener("submit", (event) => {
  const form = event.target.closest && event.target.closest("form[data-guard-unsaved]");
  if (!form) return;
  dirtyForm = null;
  if (form.dataset.draftKey) {
    saveDraft(form);
    window.sessionStorage.setItem(PENDING, form.dataset.draftKey);
  }
});

document.addEventListener("DOMContentLoaded", () => initForms(document));

// Focus moves to what an update left for the author; one that is not a control (a heading,
// a message) becomes focusable by script first.
function focusOn(element) {
  if (!element.matches("a[href], button, input, select, textarea")) element.tabIndex = -1;
  element.focus();
}

// The editor beside the preview: opened by a segment's link, closed by its button. Closing
// it returns focus to the link that opened it, or, when a save has re-rendered the preview
// since, to the same link in the new preview.
const PANEL_LINKS = '#preview-result a[hx-target="#preview-editor"]';
let panelOpener = null;

document.addEventListener("htmx:beforeRequest", (event) => {
  const link = event.detail.elt;
  if (!link.matches || !link.matches(PANEL_LINKS)) return;
  const twins = [...document.querySelectorAll(PANEL_LINKS)].filter(
    (other) => other.getAttribute("href") === link.getAttribute("href")
      && other.className === link.className,
  );
  panelOpener = {
    element: link, href: link.getAttribute("href"), className: link.className,
    index: twins.indexOf(link),
  };
});

function panelOpenerNow() {
  if (!panelOpener) return null;
  if (panelOpener.element.isConnected) return panelOpener.element;
  const links = [...document.querySelectorAll(PANEL_LINKS)];
  const sameHref = links.filter((link) => link.getAttribute("href") === panelOpener.href);
  const twins = sameHref.filter((link) => link.className === panelOpener.className);
  // Left out of the new preview altogether: its heading, so focus stays near the prompt.
  return twins[panelOpener.index] || twins[0] || sameHref[0]
    || document.getElementById("prompt-title");
}

document.addEventListener("htmx:afterSwap", (event) => {
  const target = event.detail.target;
  if (!target || target.id !== "preview-editor") return;
  // The panel scrolls on its own beside the prompt: show its top (the saved message, the
  // segment's name) unless an error or a conflict is what to read first (initForms).
  target.scrollTop = 0;
  initForms(target);
  if (target.querySelector("#error-summary, #conflict")) return;
  target.focus({ preventScroll: true });
  // Stacked above the result (narrow screens), its top comes into view; beside the prompt
  // (sticky) it is in view already, and the page stays where the author was reading.
  if (getComputedStyle(target).position !== "sticky") target.scrollIntoView({ block: "start" });
});
document.addEventListener("click", (event) => {
  const close = event.target.closest && event.target.closest("[data-close-panel]");
  if (!close) return;
  const panel = close.closest("#preview-editor");
  if (dirtyForm && panel.contains(dirtyForm)
      && !window.confirm("Close the editor? Your unsaved changes stay as a draft.")) return;
  if (panel.contains(dirtyForm)) dirtyForm = null;
  panel.replaceChildren();
  const back = panelOpenerNow() || document.getElementById("preview-result");
  panelOpener = null;
  if (back) focusOn(back);
});

// The preview sends its prompt once, as blocks: opening "Plain text, to copy" joins them
// here, as the assembler does (the separator is the page's). Without this file, the link
// in its place asks the server for the text.
document.addEventListener("toggle", (event) => {
  const details = event.target;
  if (!details.matches || !details.matches("details.plain-prompt") || !details.open) return;
  const slot = details.querySelector("[data-plain-prompt]");
  const prompt = details.parentElement.querySelector(".prompt[data-separator]");
  if (!slot || !prompt) return;
  const blocks = [...prompt.querySelectorAll(".block-text")].map((block) => block.textContent);
  const text = document.createElement("textarea");
  text.readOnly = true;
  text.rows = 12;
  text.className = "mono";
  text.setAttribute("aria-label", "The assembled prompt as plain text");
  text.value = blocks.join(prompt.dataset.separator);
  slot.replaceWith(text);
}, true);  // toggle does not bubble: heard on its way down

// Destructive choices ask first (they are also behind a disclosure without JavaScript).
document.addEventListener("click", (event) => {
  const link = event.target.closest("[data-confirm]");
  if (link && !window.confirm(link.dataset.confirm)) {
    event.preventDefault();
    return;
  }
  if (link && link.hasAttribute("data-discard-draft")) {
    dirtyForm = null;
    clearDrafts(link.dataset.discardDraft);
  }
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

// After an in-place update: the entry's other forms learn its new revision (the change
// was the author's own), and focus returns to the control the author used. Only the forms
// that were at the revision before the update move on: one based on an older revision (a
// restored draft) keeps it, so that its save is still merged.
let revisionBeforeSwap = null;
document.addEventListener("htmx:beforeSwap", (event) => {
  const target = event.detail.target;
  const revision = target && target.querySelector("[data-entry-revision]");
  revisionBeforeSwap = revision ? revision.value : null;
});
document.addEventListener("htmx:afterSwap", (event) => {
  // An outerHTML swap replaces the target: find its successor by id.
  const old = event.detail.target;
  const swapped = old && (old.isConnected ? old : old.id && document.getElementById(old.id));
  if (!swapped) return;
  const revision = swapped.querySelector("[data-entry-revision]");
  if (revision && revisionBeforeSwap !== null) {
    for (const input of document.querySelectorAll('input[name="expected_revision"]')) {
      if (input.value === revisionBeforeSwap) input.value = revision.value;
    }
  }
  const focusForm = swapped.querySelector("form[data-focus]");
  const action = focusForm && focusForm.dataset.focus;
  if (action) {
    // The button used, or (moved to an end of the list) its other arrow, or the message.
    const [verb, slug] = action.split(":");
    const other = { up: "down", down: "up" }[verb];
    const button = (value) => focusForm.querySelector(
      `button[value="${CSS.escape(value)}"]:not([disabled])`,
    );
    const target = swapped.querySelector("[role=alert]")
      || button(action)
      || (other && button(`${other}:${slug}`))
      || swapped.querySelector("h2");
    if (target) focusOn(target);
  }
});

// Fields whose error box holds an error are marked invalid for assistive technology.
function markInvalidFields() {
  for (const box of document.querySelectorAll("[data-errors-for]")) {
    const field = document.getElementById(box.dataset.errorsFor);
    if (!field) continue;
    if (box.textContent.trim()) {
      field.setAttribute("aria-invalid", "true");
      field.setAttribute("aria-errormessage", box.id);
    } else {
      field.removeAttribute("aria-invalid");
      field.removeAttribute("aria-errormessage");
    }
  }
  const result = document.getElementById("preview-result");
  const stale = document.getElementById("preview-stale");
  if (result && stale) result.classList.toggle("is-stale", !stale.hidden);
}

document.addEventListener("DOMContentLoaded", markInvalidFields);
document.addEventListener("htmx:afterSettle", markInvalidFields);
document.addEventListener("htmx:oobAfterSwap", markInvalidFields);

// A table that scrolls sideways in its own box (phone widths) must be reachable by
// keyboard to be scrolled: one with no link or control inside becomes focusable itself.
const FOCUSABLE = "a[href], button, input, select, textarea, [tabindex]";
function focusableScrollers() {
  for (const table of document.querySelectorAll("table.data")) {
    const scrolls = table.scrollWidth > table.clientWidth + 1;
    if (scrolls && !table.hasAttribute("tabindex") && !table.querySelector(FOCUSABLE)) {
      table.tabIndex = 0;
      table.dataset.scrollFocus = "";
    } else if (!scrolls && "scrollFocus" in table.dataset) {
      table.removeAttribute("tabindex");
      delete table.dataset.scrollFocus;
    }
  }
}
document.addEventListener("DOMContentLoaded", focusableScrollers);
document.addEventListener("htmx:afterSettle", focusableScrollers);
window.addEventListener("resize", focusableScrollers);

// A label picker's "New label…" choice shows the field that names the new label; any
// other choice hides it (without JavaScript both show, and the name is used with that
// choice). On the publish page, another existing label reloads the impact report against
// what that label points at.
const NEW_LABEL = "+new";
function syncNewLabel(select) {
  const boxes = document.querySelectorAll(`[data-new-label-of="${CSS.escape(select.id)}"]`);
  for (const box of boxes) box.hidden = select.value !== NEW_LABEL;
  return boxes;
}
document.addEventListener("change", (event) => {
  const select = event.target.closest && event.target.closest("select[data-new-label]");
  if (!select) return;
  const boxes = syncNewLabel(select);
  if (select.value === NEW_LABEL) {
    const input = boxes.length && boxes[0].querySelector("input");
    if (input) input.focus();
  } else if ("reloadReport" in select.dataset) {
    const url = new URL(window.location.href);
    url.searchParams.set("label", select.value);
    window.location.assign(url);
  }
});
document.addEventListener("DOMContentLoaded", () => {
  for (const select of document.querySelectorAll("select[data-new-label]")) syncNewLabel(select);
});

// A new object's slug is suggested from its name as the author types it (accents dropped,
// anything else between words becomes "-"), until the author edits the slug itself.
function slugFrom(name) {
  return name.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase()
    .replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 64).replace(/-+$/, "");
}
document.addEventListener("input", (event) => {
  const target = event.target;
  if (!target.id) return;
  const slugs = document.querySelectorAll(`input[data-slug-from="${CSS.escape(target.id)}"]`);
  for (const slug of slugs) {
    if (slug.value && slug.value !== slug.dataset.suggested) continue;
    slug.value = slugFrom(target.value);
    slug.dataset.suggested = slug.value;
  }
});

// The top bar is one row: when the sections and the account do not fit beside the brand
// (a phone, a laptop, more sections for an admin), they go behind "Menu" and open below
// it. Decided by measuring, so it holds whatever the role and the number of sections;
// without this script everything stays listed.
const SAME_ROW = 8; // px between the vertical centres of items on one row
function topbarWraps(bar, toggle) {
  const items = [...bar.children, ...bar.querySelectorAll(".mainnav li")].filter(
    (el) => el !== toggle && !el.matches(".mainnav") && el.getClientRects().length,
  );
  const centres = items.map((el) => {
    const box = el.getBoundingClientRect();
    return box.top + box.height / 2;
  });
  return Math.max(...centres) - Math.min(...centres) > SAME_ROW;
}
document.addEventListener("DOMContentLoaded", () => {
  const toggle = document.querySelector(".nav-toggle");
  if (!toggle) return;
  const bar = toggle.closest(".topbar");
  toggle.hidden = false; // shown by studio.css only while the bar is collapsed
  const fit = () => {
    if (bar.classList.contains("nav-open")) return;
    bar.classList.remove("nav-collapsed");
    bar.classList.toggle("nav-collapsed", topbarWraps(bar, toggle));
  };
  const close = () => {
    bar.classList.remove("nav-open");
    toggle.setAttribute("aria-expanded", "false");
    fit();
  };
  fit();
  window.addEventListener("resize", fit);
  toggle.addEventListener("click", () => {
    if (bar.classList.contains("nav-open")) {
      close();
      return;
    }
    bar.classList.add("nav-open");
    toggle.setAttribute("aria-expanded", "true");
  });
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || !bar.classList.contains("nav-open")) return;
    close();
    toggle.focus();
  });
});

// Object pickers (forms.common.ObjectPicker): the text box lists matches as you type
// (htmx fills the listbox); ArrowDown/ArrowUp move through them, Enter or a click picks
// one, Escape closes the list. Picking fills the hidden input with "kind:slug" and sends
// an input event from it, so a filter form refreshes; typing undoes the pick (the server
// then reads what was typed, as it does without JavaScript).
function pickerParts(element) {
  const picker = element && element.closest && element.closest("[data-picker]");
  if (!picker) return null;
  return {
    picker,
    input: picker.querySelector('[role="combobox"]'),
    hidden: picker.querySelector("[data-picker-value]"),
    listbox: picker.querySelector('[role="listbox"]'),
  };
}

function pickerOptions(parts) {
  return [...parts.listbox.querySelectorAll('[role="option"]:not([aria-disabled="true"])')];
}

function pickerClose(parts) {
  parts.listbox.replaceChildren();
  parts.input.setAttribute("aria-expanded", "false");
  parts.input.removeAttribute("aria-activedescendant");
}

function pickerActivate(parts, option) {
  for (const other of pickerOptions(parts)) {
    const active = other === option;
    other.setAttribute("aria-selected", active ? "true" : "false");
    other.classList.toggle("active", active);
  }
  parts.input.setAttribute("aria-activedescendant", option.id);
  option.scrollIntoView({ block: "nearest" });
}

function pickerChoose(parts, option) {
  parts.hidden.value = option.dataset.value;
  parts.input.value = option.dataset.label;
  pickerClose(parts);
  parts.hidden.dispatchEvent(new Event("input", { bubbles: true }));
  parts.hidden.dispatchEvent(new Event("change", { bubbles: true }));
}

document.addEventListener("htmx:afterSwap", (event) => {
  const parts = pickerParts(event.detail.target);
  if (!parts || event.detail.target !== parts.listbox) return;
  // The text may have changed since this answer was asked for: a focused box only.
  if (document.activeElement !== parts.input) {
    pickerClose(parts);
    return;
  }
  pickerOptions(parts).forEach((option, index) => {
    option.id = `${parts.listbox.id}_${index}`;
  });
  parts.input.setAttribute("aria-expanded", parts.listbox.children.length ? "true" : "false");
  parts.input.removeAttribute("aria-activedescendant");
});

document.addEventListener("keydown", (event) => {
  const parts = pickerParts(event.target);
  if (!parts || event.target !== parts.input) return;
  const options = pickerOptions(parts);
  const current = options.findIndex((option) => option.getAttribute("aria-selected") === "true");
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    if (!options.length) return;
    event.preventDefault();
    const step = event.key === "ArrowDown" ? 1 : -1;
    const next = current < 0 ? (step > 0 ? 0 : options.length - 1)
      : (current + step + options.length) % options.length;
    pickerActivate(parts, options[next]);
  } else if (event.key === "Enter" && current >= 0) {
    event.preventDefault();
    pickerChoose(parts, options[current]);
  } else if (event.key === "Escape" && parts.listbox.children.length) {
    event.preventDefault();
    pickerClose(parts);
  }
});

// Typing in the box is the picker's business only (a filter form waits for a pick, so the
// event stops at the picker), and it undoes the pick.
function initPickers(root) {
  const pickers = root.matches && root.matches("[data-picker]") ? [root] : [];
  pickers.push(...(root.querySelectorAll ? root.querySelectorAll("[data-picker]") : []));
  for (const picker of pickers) {
    if (picker.dataset.pickerReady) continue;
    picker.dataset.pickerReady = "1";
    picker.addEventListener("input", (event) => {
      if (event.target.getAttribute("role") !== "combobox") return;
      picker.querySelector("[data-picker-value]").value = "";
      event.stopPropagation();
    });
  }
}
if (window.htmx) window.htmx.onLoad(initPickers);

document.addEventListener("mousedown", (event) => {
  const option = event.target.closest && event.target.closest('[data-picker] [role="option"]');
  if (!option || option.getAttribute("aria-disabled") === "true") return;
  event.preventDefault(); // the box keeps the focus
  pickerChoose(pickerParts(option), option);
});

document.addEventListener("focusout", (event) => {
  const parts = pickerParts(event.target);
  if (parts && !parts.picker.contains(event.relatedTarget)) pickerClose(parts);
});
