// Pictor consent cleanup (origin/consent, Script). Evaluated after load,
// after the stylesheet of CSS(host). It hides fixed and sticky consent
// overlays that the rules missed, the empty backdrops behind them, and
// unlocks the scrolling that banners lock. It evaluates to a summary:
// {hidden: number, marked: boolean, unlocked: boolean}.
(() => {
  "use strict";
  const MARK = "--pictor-consent"; // set by every hiding rule of CSS(host)
  const LIMIT = 20000; // elements examined, to bound the cost on huge pages
  // Names of consent tools and of the ids and classes banners use.
  const NAME = /cookie|consent|gdpr|ccpa|\bcmp\b|cmp[-_]|[-_]cmp|datenschutz|onetrust|optanon|didomi|cybot|usercentrics|truste|sp_message|iubenda|termly|osano|axeptio|tarteaucitron|borlabs|cmplz/i;
  // What a banner says.
  const TEXT = /cookie|consent|gdpr|ccpa|datenschutz|einwilligung|personal data|your privacy|privacy choices|vie privée|privacidad|riservatezza/i;
  // What its buttons say: a consent verb, never just "settings".
  const ACTION = /\b(accept|agree|allow|reject|decline|deny|refuse|dismiss|got it|understand|ok|okay|akzeptieren|zustimmen|ablehnen|einverstanden|accepter|refuser|aceptar|rechazar|accetta|rifiuta|aceitar|accepteren|weigeren)\b/i;
  // Where consent tools' frames come from.
  const FRAME = /consent|\bcmp\b|cmp[-_.]|privacy-mgmt|sp_message|cookielaw|cookiebot|usercentrics|didomi|quantcast|trustarc|truste/i;
  // Page landmarks: a header or footer that links to a cookie policy is no banner.
  const LANDMARK = /^(HEADER|NAV|FOOTER|MAIN)$/;
  const CONTROLS = "button,a,[role=button],input[type=button],input[type=submit]";

  const html = document.documentElement;
  const body = document.body;
  const result = { hidden: 0, marked: false, unlocked: false };
  if (!body) return result;

  const attrs = (el) =>
    [el.id, el.getAttribute("class"), el.getAttribute("aria-label"), el.getAttribute("aria-labelledby"),
      el.getAttribute("aria-describedby")].filter(Boolean).join(" ");
  const hasAction = (el) => {
    const controls = el.querySelectorAll(CONTROLS);
    for (let i = 0; i < controls.length && i < 50; i++) {
      const c = controls[i];
      if (ACTION.test(c.textContent || c.value || c.getAttribute("aria-label") || "")) return true;
    }
    return false;
  };
  const cmpFrame = (el) => {
    for (const f of el.querySelectorAll("iframe")) {
      if (NAME.test([f.id, f.name, f.title].join(" ")) || FRAME.test(f.src)) return true;
    }
    return false;
  };
  const isConsent = (el) => {
    const text = (el.innerText || "").slice(0, 4001);
    if (text.length > 4000) return false; // a page layout, not a banner
    const named = NAME.test(attrs(el));
    const landmark = LANDMARK.test(el.tagName) || /^(banner|navigation|contentinfo|main)$/.test(el.getAttribute("role") || "");
    if (landmark && !named) return false;
    if (cmpFrame(el)) return true;
    const says = TEXT.test(text);
    return (says && hasAction(el)) || (named && (says || hasAction(el)));
  };
  const hide = (el) => {
    el.style.setProperty("display", "none", "important");
    el.setAttribute("data-pictor-consent", "hidden");
    result.hidden++;
  };

  // One pass over the body: note the marker and collect visible fixed and
  // sticky elements, outermost first (document order).
  const overlays = [];
  const all = body.getElementsByTagName("*");
  for (let i = 0; i < all.length && i < LIMIT; i++) {
    const el = all[i];
    const cs = getComputedStyle(el);
    if (!result.marked && cs.getPropertyValue(MARK).trim() === "1") result.marked = true;
    if (cs.position !== "fixed" && cs.position !== "sticky") continue;
    if (cs.display === "none" || cs.visibility === "hidden") continue;
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) overlays.push([el, cs, r]);
  }
  const inHidden = (el) => el.closest("[data-pictor-consent]") !== null;
  for (const [el] of overlays) {
    if (!inHidden(el) && isConsent(el)) hide(el);
  }

  if (result.hidden > 0 || result.marked) {
    // Backdrops: empty, fixed, covering most of the viewport, above the
    // page and see-through; they dim or block the page behind a banner.
    const area = innerWidth * innerHeight;
    for (const [el, cs, r] of overlays) {
      if (inHidden(el) || cs.position !== "fixed" || r.width * r.height < 0.8 * area) continue;
      if ((parseInt(cs.zIndex, 10) || 0) < 1) continue;
      if ((el.innerText || "").trim() !== "" || el.querySelector("img,svg,video,canvas,iframe,picture")) continue;
      const tinted = parseFloat(cs.opacity) < 1 || /rgba\(.*,\s*0?\.\d+\)$/.test(cs.backgroundColor) ||
        (cs.backdropFilter && cs.backdropFilter !== "none");
      if (tinted) hide(el);
    }
    // Scrolling: banners set overflow hidden on html or body, or fix the body.
    const hcs = getComputedStyle(html);
    if (hcs.overflowY === "hidden" || hcs.overflowY === "clip") {
      html.style.setProperty("overflow-y", "auto", "important");
      result.unlocked = true;
    }
    const bcs = getComputedStyle(body);
    if (bcs.overflowY === "hidden" || bcs.overflowY === "clip") {
      // "clip" keeps a horizontal cut without making body a scroll box.
      if (bcs.overflowX === "hidden") body.style.setProperty("overflow-x", "clip", "important");
      body.style.setProperty("overflow-y", "visible", "important");
      result.unlocked = true;
    }
    if (bcs.position === "fixed") {
      body.style.setProperty("position", "static", "important");
      result.unlocked = true;
    }
  }
  return result;
})()
