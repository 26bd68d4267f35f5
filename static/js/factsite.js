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

// --- The reader's view is the page's view ---
// A result page's view (the selected sentence, the score rule, what is left out) is its URL's
// query. While a run goes on, #result-body polls. A poll must ask for the view the reader chose
// last, not the one its hx-get was rendered with, and an answer to any request sent before the
// reader's latest change must never be shown: on a slow server it arrives after that change and
// would undo it.
let viewVersion = 0; // how many changes the reader has asked for
let pendingView = null; // the path of the latest change until its answer arrives
const sentRequests = new WeakMap(); // xhr → { version, poll }
let failures = 0; // requests in a row that could not reach the server
let retryAt = 0; // no poll before this time (ms), while backing off

function resultBody() {
  return document.getElementById("result-body");
}

// A control's link is the view it was rendered in plus its own change. A second change made
// while the first is on its way would drop the first, so it waits for the first's answer and
// then asks with its control's link as that answer has rendered it.
const waitingChanges = [];

function isReaderChange(elt) {
  const body = resultBody();
  return Boolean(body) && elt !== body && body.contains(elt);
}

document.addEventListener("htmx:confirm", (event) => {
  if (pendingView === null || !isReaderChange(event.detail.elt)) return;
  event.preventDefault();
  const { elt, issueRequest } = event.detail;
  waitingChanges.push({ elt, id: elt.id, issue: issueRequest });
});

function issueNextWaitingChange() {
  while (waitingChanges.length > 0) {
    const { elt, id, issue } = waitingChanges.shift();
    // A control the answer took away (the evidence of another sentence) has nothing left to
    // change, nor has one whose node idiomorph reused for another control (another id).
    if (isReaderChange(elt) && elt.id === id) {
      issue(true);
      return;
    }
  }
}

document.addEventListener("htmx:configRequest", (event) => {
  const { elt } = event.detail;
  if (elt === resultBody()) {
    // Until the address bar shows the reader's latest change, that change is the current view.
    event.detail.path = pendingView ?? window.location.pathname + window.location.search;
    // A server that neither answers nor refuses still counts as unreachable.
    event.detail.timeout = 15_000;
  } else if (isReaderChange(elt)) {
    event.detail.path = elt.getAttribute("hx-get") ?? event.detail.path;
    viewVersion += 1;
    pendingView = event.detail.path;
  }
});

document.addEventListener("htmx:beforeRequest", (event) => {
  const poll = event.detail.requestConfig.elt === resultBody();
  if (poll && Date.now() < retryAt) {
    event.preventDefault(); // backing off while the server cannot be reached
    return;
  }
  sentRequests.set(event.detail.xhr, { version: viewVersion, poll });
});

document.addEventListener("htmx:beforeSwap", (event) => {
  const sent = sentRequests.get(event.detail.xhr);
  if (sent && sent.version < viewVersion) event.detail.shouldSwap = false;
});

document.addEventListener("htmx:afterRequest", (event) => {
  const sent = sentRequests.get(event.detail.xhr);
  if (!sent) return;
  // Answered or failed, the latest change is no longer pending: on success the address bar
  // shows it now; on failure the page stays with the view the address bar shows.
  if (!sent.poll && sent.version === viewVersion) {
    pendingView = null;
    issueNextWaitingChange();
  }
  if (event.detail.successful) connectionRestored();
});

// Going back or forward shows another view: answers asked for before it are stale.
document.addEventListener("htmx:historyRestore", () => {
  viewVersion += 1;
  pendingView = null;
  waitingChanges.length = 0;
  startWatchingRun();
});

// --- When the server cannot be reached ---
// Polls keep going, ever less often (2, 4, then every 8 s), and the page says so; the first
// answer clears the notice and brings the page up to date.
function connectionLost(event) {
  const sent = sentRequests.get(event.detail.xhr);
  const notice = document.getElementById("connection-notice");
  if (!sent || !notice) return;
  failures += 1;
  if (sent.poll) retryAt = Date.now() + Math.min(2 ** failures, 8) * 1000;
  notice.textContent = sent.poll ? notice.dataset.polling : notice.dataset.change;
}

function connectionRestored() {
  failures = 0;
  retryAt = 0;
  const notice = document.getElementById("connection-notice");
  if (notice && notice.textContent) notice.textContent = "";
}

document.addEventListener("htmx:sendError", connectionLost);
document.addEventListener("htmx:timeout", connectionLost);
document.addEventListener("htmx:responseError", (event) => {
  // 5xx: the server (or the proxy in front of it) is down or failing; a 4xx is an answer.
  if (event.detail.xhr.status >= 500) connectionLost(event);
});

// --- The end of a run is announced once, to a reader who saw it running ---
// The server puts the message in #run-ended-message once the run has finished; the live region
// outside #result-body keeps it through later updates. A finished run's page, loaded or
// reloaded, has no run to watch and says nothing.
let watchingRun = false;

function startWatchingRun() {
  watchingRun = Boolean(resultBody()) && !document.getElementById("run-ended-message");
}
// Deferred: the document is parsed when this runs.
startWatchingRun();

document.addEventListener("htmx:afterSettle", () => {
  const message = document.getElementById("run-ended-message");
  const region = document.getElementById("run-ended");
  if (!watchingRun || !message || !region) return;
  watchingRun = false;
  region.textContent = message.textContent.trim();
});

// --- An update leaves the evidence panel where the reader had it ---
// On wide screens the evidence panel is sticky. Scrolled to the end of the panels, it hangs from
// the bottom of the text column, so an update that makes that column taller below the browser's
// scroll anchor (a sentence's note taking a second line when its judgements arrive, as at the end
// of a run) drags the panel down. Scroll anchoring cannot hold it: browsers never anchor to a sticky
// element, which does not move with the page. So while the reader's focus is in the panel, the page
// scrolls by as much as the update moved the panel, as anchoring does for the rest of the page.
const panelTops = new WeakMap(); // xhr → the panel's top on screen before its answer was swapped in

function readerPanel() {
  const evidence = document.getElementById("evidence");
  if (!evidence || !evidence.contains(document.activeElement)) return null;
  return getComputedStyle(evidence).position === "sticky" ? evidence : null;
}

document.addEventListener("htmx:beforeSwap", (event) => {
  const panel = readerPanel();
  if (panel && event.detail.shouldSwap) panelTops.set(event.detail.xhr, panel.getBoundingClientRect().top);
});

// After the swap, before the browser paints it: the panel never shows in the wrong place.
document.addEventListener("htmx:afterSwap", (event) => {
  const before = panelTops.get(event.detail.xhr);
  panelTops.delete(event.detail.xhr);
  const panel = readerPanel();
  if (before === undefined || !panel) return;
  const moved = panel.getBoundingClientRect().top - before;
  if (Math.abs(moved) >= 1) window.scrollBy({ top: moved, behavior: "instant" });
});

// --- On narrow screens, show the evidence of the sentence just selected ---
// There the evidence panel sits below the text, out of sight of the link that filled it.
const narrowScreen = window.matchMedia("(max-width: 900px)");
const reducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)");
const sentenceRequests = new WeakSet();

document.addEventListener("htmx:beforeRequest", (event) => {
  const source = event.detail.elt;
  if (source instanceof Element && source.matches("a.sentence, a.sentence-part, .sentence-notes a")) {
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
// refuses over-long text, names the limit and keeps the text in the box. The count is the box's
// description (aria-describedby), read when the reader asks; it is not a live region, which
// would be read out again at every keystroke. Only crossing the limit, either way, is announced
// (#text-count-alert holds the words).
const numberFormat = new Intl.NumberFormat(document.documentElement.lang || undefined);
let wasOver = null; // whether the text was over the limit at the last count

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
  announceLimit(over > 0);
}

function announceLimit(isOver) {
  const alert = document.getElementById("text-count-alert");
  // The first count (the page loading, or coming back) says nothing: nothing was crossed.
  if (alert && wasOver !== null && isOver !== wasOver) {
    alert.textContent = isOver ? alert.dataset.over : alert.dataset.within;
  }
  wasOver = isOver;
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

// --- The downloads menu ---
// A <details>: it opens and closes without this. This closes it as a menu is expected to close:
// on Escape (the focus back on its button), on a click outside it, and once a download is chosen.
function openMenus() {
  return document.querySelectorAll("details.menu[open]");
}

document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  for (const menu of openMenus()) {
    menu.open = false;
    if (menu.contains(document.activeElement)) menu.querySelector("summary").focus();
  }
});

document.addEventListener("click", (event) => {
  for (const menu of openMenus()) {
    const chosen = event.target instanceof Element && event.target.closest(".menu-items a");
    if (!menu.contains(event.target) || (chosen && menu.contains(chosen))) menu.open = false;
  }
});

// --- A citation's badge ---
// A <details> in the text (issue 34): it opens and closes without this. Escape closes the one the
// focus is in, its panel lying over the text below it, and puts the focus back on its badge.
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape" || !(document.activeElement instanceof Element)) return;
  const badge = document.activeElement.closest("details.citation[open]");
  if (!badge) return;
  badge.open = false;
  badge.querySelector("summary").focus();
});

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
