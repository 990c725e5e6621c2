// Live preview: a form with data-preview="/console/.../preview" is sent
// there, as it is, 400 ms after the last change; a newer change aborts
// the preview in flight. The answer is the image, shown in the page's
// [data-preview-image], with its render time from Server-Timing in
// [data-preview-status]; or a refusal in the standard error body, whose
// message and field errors are shown there instead. A button with
// data-preview-now previews at once.
//
//   <form data-preview="/console/new/preview" [data-preview-initial]>
//   <img data-preview-image alt="…">  <p data-preview-status aria-live="polite">

export const DEBOUNCE_MS = 400;

/** Returns the render time in ms of a Server-Timing header, or null. */
export function renderTime(header) {
  const m = /(?:^|,)\s*render\s*;[^,]*?dur=([0-9.]+)/.exec(header || "");
  return m ? Math.round(Number(m[1])) : null;
}

/** Returns the text that tells a refusal: its message and its fields'. */
export function refusalText(status, body, retryAfter) {
  if (status === 429) {
    const seconds = Number(retryAfter);
    return "Too many previews for now" + (seconds > 0 ? ": try again in " + seconds + " s." : ".");
  }
  let text = (body && body.message) || "The preview failed (" + status + ").";
  for (const f of (body && body.validation_errors) || []) {
    text += " " + f.path + ": " + f.message + ".";
  }
  return text;
}

/** Returns a random id for this page's previews (not secret). */
function pageID() {
  const bytes = new Uint8Array(8);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function previewer(form) {
  const image = document.querySelector("[data-preview-image]");
  // The server cancels this page's older preview by this number, whatever
  // order the requests reach it in.
  const page = pageID();
  let seq = 0;
  const status = document.querySelector("[data-preview-status]");
  let timer = 0;
  let inFlight = null;
  let shown = "";

  const say = (text, busy) => {
    if (status) {
      status.textContent = text;
    }
    if (image) {
      image.closest("[data-preview-frame]")?.setAttribute("aria-busy", busy ? "true" : "false");
    }
  };

  const run = async () => {
    clearTimeout(timer);
    inFlight?.abort();
    const controller = new AbortController();
    inFlight = controller;
    const fields = new URLSearchParams(new FormData(form));
    seq += 1;
    fields.set("preview_page", page);
    fields.set("preview_seq", String(seq));
    say("Rendering…", true);
    try {
      const resp = await fetch(form.getAttribute("data-preview"), {
        method: "POST",
        body: fields,
        credentials: "same-origin",
        signal: controller.signal,
      });
      const type = resp.headers.get("Content-Type") || "";
      if (resp.ok && type.startsWith("image/")) {
        const blob = await resp.blob();
        if (shown) {
          URL.revokeObjectURL(shown);
        }
        shown = URL.createObjectURL(blob);
        if (image) {
          image.src = shown;
          image.hidden = false;
        }
        const ms = renderTime(resp.headers.get("Server-Timing"));
        say(ms === null ? "Rendered." : "Rendered in " + ms + " ms.", false);
        return;
      }
      if (resp.ok) {
        say("This format is not shown here; choose png, jpg or webp to preview.", false);
        return;
      }
      let body = null;
      if (type.includes("json")) {
        body = await resp.json();
      } else if (resp.redirected || resp.status === 403) {
        body = { message: "Your session ended or this page is out of date: reload the page." };
      }
      say(refusalText(resp.status, body, resp.headers.get("Retry-After")), false);
    } catch (err) {
      if (err && err.name === "AbortError") {
        return; // a newer preview took over
      }
      say("The preview could not reach Pictor.", false);
    } finally {
      if (inFlight === controller) {
        inFlight = null;
      }
    }
  };

  const later = () => {
    clearTimeout(timer);
    timer = setTimeout(run, DEBOUNCE_MS);
  };
  form.addEventListener("input", later);
  form.addEventListener("change", later);
  for (const button of document.querySelectorAll("[data-preview-now]")) {
    button.addEventListener("click", (event) => {
      event.preventDefault();
      run();
    });
  }
  if (form.hasAttribute("data-preview-initial")) {
    run();
  }
}

/** Starts the live preview of every form that asks for one. */
export function installPreview(doc = document) {
  for (const form of doc.querySelectorAll("form[data-preview]")) {
    previewer(form);
  }
}
