// The console's script: progressive enhancement for pages that work
// without it. Every behaviour is declared in the HTML with a data-
// attribute and handled by one listener on the document, so it needs no
// inline handler (the console's CSP forbids them), no eval, and applies
// as well to content a page inserts later.
//
//   <form data-confirm="Delete 3 images?">    asks before submitting; a
//     submit button's own data-confirm wins over the form's.
//   <form data-busy-guard>                    marks the form aria-busy
//     while it submits and ignores a second submit (double clicks).
//   <button type="button" data-copy="text">   copies the text;
//   <button type="button" data-copy-target="#id">  copies the text (or
//     the value, for a form control) of the element with that id.
//
// A copy button tells the result in its own text for a moment and in
// the element named by its aria-describedby, if any, or else in the
// page's status region (an element with data-console-status).

import { installPreview } from "./preview.js";
import "./templates.js";

const COPIED_FOR_MS = 2000;

/** Returns the confirmation text for a submit, or "" when none is asked. */
export function confirmText(form, submitter) {
  if (submitter && submitter.hasAttribute("data-confirm")) {
    return submitter.getAttribute("data-confirm") || "";
  }
  return form.getAttribute("data-confirm") || "";
}

function onSubmit(event) {
  const form = event.target;
  if (!(form instanceof HTMLFormElement)) {
    return;
  }
  if (form.hasAttribute("data-busy-guard") && form.getAttribute("aria-busy") === "true") {
    event.preventDefault();
    return;
  }
  const text = confirmText(form, event.submitter);
  if (text !== "" && !window.confirm(text)) {
    event.preventDefault();
    return;
  }
  if (form.hasAttribute("data-busy-guard") && !event.defaultPrevented) {
    form.setAttribute("aria-busy", "true");
  }
}

// A page restored from the back/forward cache comes back as it was left:
// mid-submit. Let its forms be submitted again.
function onPageShow(event) {
  if (!event.persisted) {
    return;
  }
  for (const form of document.querySelectorAll("form[data-busy-guard][aria-busy]")) {
    form.removeAttribute("aria-busy");
  }
}

/** Returns the text a copy button copies, or null if its target is gone. */
export function copyText(button) {
  if (button.hasAttribute("data-copy")) {
    return button.getAttribute("data-copy");
  }
  const selector = button.getAttribute("data-copy-target");
  const target = selector ? document.querySelector(selector) : null;
  if (!target) {
    return null;
  }
  if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) {
    return target.value;
  }
  return target.textContent;
}

function announce(button, message) {
  const id = button.getAttribute("aria-describedby");
  const region = (id && document.getElementById(id)) || document.querySelector("[data-console-status]");
  if (region) {
    region.textContent = message;
  }
}

// Selects the target's text so that the person can copy it by hand: the
// clipboard API exists only in secure contexts (https, or localhost).
function selectTarget(button) {
  const selector = button.getAttribute("data-copy-target");
  const target = selector ? document.querySelector(selector) : null;
  if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) {
    target.focus();
    target.select();
    return true;
  }
  if (target) {
    const range = document.createRange();
    range.selectNodeContents(target);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return true;
  }
  return false;
}

function flash(button, label) {
  if (!button.hasAttribute("data-copy-label")) {
    button.setAttribute("data-copy-label", button.textContent);
  }
  button.textContent = label;
  clearTimeout(Number(button.getAttribute("data-copy-timer")));
  const timer = setTimeout(() => {
    button.textContent = button.getAttribute("data-copy-label");
    button.removeAttribute("data-copy-label");
    button.removeAttribute("data-copy-timer");
  }, COPIED_FOR_MS);
  button.setAttribute("data-copy-timer", String(timer));
}

async function copy(button) {
  const text = copyText(button);
  if (text === null) {
    announce(button, "Nothing to copy.");
    return;
  }
  try {
    if (!navigator.clipboard) {
      throw new Error("no clipboard API");
    }
    await navigator.clipboard.writeText(text);
    flash(button, "Copied");
    announce(button, "Copied to the clipboard.");
  } catch {
    const selected = selectTarget(button);
    announce(button, selected ? "Copy failed: the text is selected, press Ctrl+C (⌘C) to copy it." : "Copy failed.");
  }
}

function onClick(event) {
  const button = event.target instanceof Element ? event.target.closest("[data-copy],[data-copy-target]") : null;
  if (!button) {
    return;
  }
  event.preventDefault();
  copy(button);
}

/** Installs the console's handlers on doc; installing twice is harmless. */
export function install(doc = document) {
  if (doc.documentElement.hasAttribute("data-console-js")) {
    return;
  }
  doc.documentElement.setAttribute("data-console-js", "");
  doc.addEventListener("submit", onSubmit);
  doc.addEventListener("click", onClick);
  window.addEventListener("pageshow", onPageShow);
  installPreview(doc);
}

install();
