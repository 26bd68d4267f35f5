// factsite's own script: small enhancements around HTMX, none needed to use the site.
// Loaded with `defer` and no inline script anywhere, so a Content-Security-Policy can forbid inline script.

// --- Morphing keeps what the reader opened ---
// The result page polls and re-renders with idiomorph; the server never knows which <details>
// the reader opened, so without this every poll would close them again.
let morphConfigured = false;

function configureMorph() {
  if (morphConfigured || !window.Idiomorph) return;
  const callbacks = window.Idiomorph.defaults.callbacks;
  const previous = callbacks.beforeAttributeUpdated;
  callbacks.beforeAttributeUpdated = (attributeName, node, mutationType) => {
    if (attributeName === "open" && node.nodeName === "DETAILS" && mutationType === "remove") return false;
    return previous(attributeName, node, mutationType);
  };
  morphConfigured = true;
}

// Deferred scripts run in order, so idiomorph is normally here already; if this script ever
// runs first, every deferred script has run by DOMContentLoaded.
configureMorph();
document.addEventListener("DOMContentLoaded", configureMorph, { once: true });

// --- On narrow screens, show the evidence of the sentence just selected ---
// There the evidence panel sits below the text, out of sight of the link that filled it.
const narrowScreen = window.matchMedia("(max-width: 900px)");
const reducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)");
const sentenceRequests = new WeakSet();

document.addEventListener("htmx:beforeRequest", (event) => {
  const source = event.detail.elt;
  if (source instanceof Element && source.matches("a.sentence, .sentence-notes a")) {
    sentenceRequests.add(event.detail.xhr);
  }
});

document.addEventListener("htmx:afterSettle", (event) => {
  // Polls come from the result body, not a sentence link: they never scroll.
  if (!sentenceRequests.has(event.detail.xhr)) return;
  sentenceRequests.delete(event.detail.xhr);
  const evidence = document.getElementById("evidence");
  if (!evidence || !narrowScreen.matches) return;
  evidence.scrollIntoView({ behavior: reducedMotion.matches ? "auto" : "smooth", block: "start" });
});

// --- Live character count of the text to verify ---
// A count rather than `maxlength`: maxlength silently cuts a long paste, while the server
// refuses over-long text, names the limit and keeps the text in the box.
const numberFormat = new Intl.NumberFormat(document.documentElement.lang || undefined);

function characterCount(text) {
  // Code points, not UTF-16 units, to count as the server's len() does (an emoji is one).
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

function updateCharCount(textarea) {
  const counter = document.getElementById("text-count");
  const limit = Number(textarea.dataset.maxChars);
  if (!counter || !limit) return;
  const count = characterCount(textarea.value);
  const over = count - limit;
  let message = `${numberFormat.format(count)} / ${numberFormat.format(limit)} characters`;
  if (over > 0) {
    message += ` — ${numberFormat.format(over)} over the limit; shorten the text or verify it in parts`;
  }
  counter.textContent = message;
  counter.classList.toggle("over", over > 0);
}

function initCharCount() {
  const textarea = document.querySelector("textarea[data-max-chars]");
  if (textarea) updateCharCount(textarea);
}

document.addEventListener("input", (event) => {
  if (event.target instanceof HTMLTextAreaElement && event.target.dataset.maxChars) {
    updateCharCount(event.target);
  }
});
if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", initCharCount, { once: true });
} else {
  initCharCount();
}
// Returning with the back button can restore a typed text without an input event.
window.addEventListener("pageshow", initCharCount);

// --- Copy the permalink ---
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy-link]");
  if (!button) return;
  const link = window.location.href;
  try {
    await navigator.clipboard.writeText(link);
    button.textContent = "Link copied";
  } catch {
    window.prompt("Copy this link:", link);
  }
  setTimeout(() => { button.textContent = "Copy link"; }, 2000);
});
