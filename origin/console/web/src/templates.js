// The template editor's values form (templates/template.html): a field
// for each variable of the template and a textarea with the same values
// as JSON, kept in step as the person types.
//
//   <fieldset data-template-values-form>
//     <input data-template-value="title">      one variable's value
//     <textarea data-template-values>          every value, a JSON object
//     <p data-template-values-status>          says when the JSON is not
//                                              an object (fields then wait)
//
// A field's text goes into the JSON as a string, or as the JSON object
// or array it holds; a JSON value shows in its field as text (a string
// as it is, anything else as its JSON). The server reads the same rule
// when the script did not run (console/templates.go, formValues).

/** Returns the value a variable's field stands for. */
export function fieldValue(text) {
  const t = text.trim();
  if (t.startsWith("{") || t.startsWith("[")) {
    try {
      return JSON.parse(t);
    } catch {
      // not JSON: the text itself
    }
  }
  return text;
}

/** Returns the text a variable's field shows for a JSON value. */
export function fieldText(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Returns the textarea's JSON object, or null when it holds none. */
export function readValues(text) {
  try {
    const v = JSON.parse(text.trim() === "" ? "{}" : text);
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      return v;
    }
  } catch {
    // not JSON
  }
  return null;
}

function say(box, text) {
  const status = box.querySelector("[data-template-values-status]");
  if (status) {
    status.textContent = text;
  }
}

function onInput(event) {
  const target = event.target;
  if (!(target instanceof HTMLElement)) {
    return;
  }
  const box = target.closest("[data-template-values-form]");
  const area = box && box.querySelector("textarea[data-template-values]");
  if (!area) {
    return;
  }
  if (target.hasAttribute("data-template-value")) {
    const values = readValues(area.value);
    if (values === null) {
      say(box, "The JSON is not an object: fix it, and the fields update it again.");
      return;
    }
    const name = target.getAttribute("data-template-value");
    if (target.value === "" && !(name in values)) {
      return;
    }
    values[name] = fieldValue(target.value);
    area.value = JSON.stringify(values, null, 2);
    area.removeAttribute("aria-invalid");
    say(box, "");
  } else if (target === area) {
    const values = readValues(area.value);
    if (values === null) {
      area.setAttribute("aria-invalid", "true");
      say(box, "Not a JSON object yet: the fields keep their values.");
      return;
    }
    area.removeAttribute("aria-invalid");
    say(box, "");
    for (const field of box.querySelectorAll("[data-template-value]")) {
      const name = field.getAttribute("data-template-value");
      field.value = name in values ? fieldText(values[name]) : "";
    }
  }
}

/** Installs the values form's handler on doc; installing twice is harmless. */
export function install(doc = document) {
  if (doc.documentElement.hasAttribute("data-template-values-js")) {
    return;
  }
  doc.documentElement.setAttribute("data-template-values-js", "");
  doc.addEventListener("input", onInput);
}

install();
