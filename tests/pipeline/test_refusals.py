"""Pages that refuse to be read: a bot challenge or a JavaScript shell is told from a real page
however short, and a failed page's reason says whether its search snippet may stand in."""

import pytest

from verification.pipeline.extract import read_html
from verification.pipeline.refusals import (
    BOT_CHALLENGE,
    CHALLENGE_ERROR,
    JAVASCRIPT_SHELL,
    SHELL_ERROR,
    error_page_failure,
    page_gone,
    snippet_passage,
    stand_in_error,
    stand_in_reason,
    unread_reason,
)

# Cloudflare's managed challenge as it was served in 2024 (ray id and tokens changed): the only
# words are in <noscript>, the rest is its style and the script that runs the challenge.
CLOUDFLARE_CHALLENGE = """<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8"><meta http-equiv="X-UA-Compatible" content="IE=Edge">
<meta name="robots" content="noindex,nofollow"><meta name="viewport" content="width=device-width,initial-scale=1">
<style>*{box-sizing:border-box;margin:0;padding:0}html{line-height:1.15;-webkit-text-size-adjust:100%;color:#313131;
font-family:system-ui,-apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,"Helvetica Neue",Arial}body{display:flex;
flex-direction:column;height:100vh;min-height:100vh}.main-content{margin:8rem auto;max-width:60rem;padding-left:1.5rem}
@media (width <= 720px){.main-content{margin-top:4rem}}.h2{font-size:1.5rem;font-weight:500;line-height:2.25rem}</style>
<meta http-equiv="refresh" content="390"></head><body class="no-js"><div class="main-wrapper" role="main">
<div class="main-content"><noscript><div id="challenge-error-title"><div class="h2"><span class="icon-wrapper">
<div class="heading-icon warning-icon"></div></span><span id="challenge-error-text">Enable JavaScript and cookies to
continue</span></div></div></noscript></div></div><script>(function(){window._cf_chl_opt={cvId: '3',cZone:
"www.example-news.com",cType: 'managed',cNounce: '61714',cRay: '8b2a41c0fd1e7a3c',cHash: '4c2e5f0a9b7d3e1',
cUPMDTk: "\\/article\\/eiffel?__cf_chl_tk=Qm9vbGVhbg-1717000000-0.0.1.1-4321",cFPWv: 'b',cITimeS: '1717000000',
cTTimeMs: '1000',cMTimeMs: '390000',cTplV: 5,cTplB: 'cf',cK: "",fa: "\\/article\\/eiffel?__cf_chl_f_tk=Qm9v",
md: "c2VjcmV0LXRva2VuLXZhbHVlLXRoYXQtaXMtbG9uZw",mdrd: "bW9yZS10b2tlbi12YWx1ZQ"};var cpo =
document.createElement('script');
cpo.src = '/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1?ray=8b2a41c0fd1e7a3c';
window._cf_chl_opt.cOgUHash = location.hash === '' && location.href.indexOf('#') !== -1 ? '#' : location.hash;
window._cf_chl_opt.cOgUQuery = location.search === '' && location.href.slice(0, location.href.length -
window._cf_chl_opt.cOgUHash.length).indexOf('?') !== -1 ? '?' : location.search;
document.getElementsByTagName('head')[0].appendChild(cpo);}());</script></body></html>"""

# The older interstitial, with its words shown (and no _cf_chl_opt to find).
CLOUDFLARE_BROWSER_CHECK = """<!DOCTYPE HTML><html lang="en-US"><head><meta charset="UTF-8" />
<title>Attention Required! | Cloudflare</title></head><body><div id="cf-wrapper"><div id="cf-error-details">
<h1>Checking your browser before accessing www.example-news.com.</h1>
<p>This process is automatic. Your browser will redirect to your requested content shortly.</p>
<p>Please allow up to 5 seconds…</p><p>DDoS protection by Cloudflare</p><p>Ray ID: 8b2a41c0fd1e7a3c</p>
</div></div></body></html>"""

# DataDome's captcha page: an iframe from captcha-delivery.com and nothing to read.
DATADOME_CAPTCHA = """<html lang="en"><head><title>example-news.com</title><style>#cmsg{animation: A 1.5s;}
@keyframes A{0%{opacity:0;}99%{opacity:0;}100%{opacity:1;}}</style></head><body style="margin:0">
<p id="cmsg">Please enable JS and disable any ad blocker</p><script>var dd={'rt':'c','cid':'AHrlqAAAAAMA1',
'hsh':'2211F522B61E269B869FA6EAFFB5E1','t':'fe','s':42046,'host':'geo.captcha-delivery.com'}</script>
<script src="https://ct.captcha-delivery.com/c.js"></script></body></html>"""


def webpack_runtime(size: int) -> str:
    """Minified-looking JavaScript of about `size` characters, as a bundler inlines its runtime."""
    chunk = (
        "!function(e){function r(r){for(var n,l,f=r[0],i=r[1],a=r[2],c=0,s=[];c<f.length;c++)l=f[c],"
        "Object.prototype.hasOwnProperty.call(o,l)&&o[l]&&s.push(o[l][0]),o[l]=0;for(n in i)"
        "Object.prototype.hasOwnProperty.call(i,n)&&(e[n]=i[n]);for(p&&p(r);s.length;)s.shift()();"
        "return u.push.apply(u,a||[]),t()}var n={},o={1:0},u=[];}([]);\n"
    )
    return chunk * (size // len(chunk) + 1)


# A create-react-app build as servers send it: metadata, a large inlined runtime and state, an
# empty root, and the <noscript> line. About 60 kB, none of it the page's words.
SPA_SHELL = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"/>
<link rel="icon" href="/favicon.ico"/><meta name="viewport" content="width=device-width,initial-scale=1"/>
<meta name="theme-color" content="#000000"/><title>Eiffel Tower facts | Example News</title>
<meta name="description" content="Everything about the Eiffel Tower: its height, its history and its visitors."/>
<link rel="apple-touch-icon" href="/logo192.png"/><link rel="manifest" href="/manifest.json"/>
<link href="/static/css/main.5f361e03.chunk.css" rel="stylesheet"></head><body>
<noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div>
<script>window.__INITIAL_STATE__={{"route":"/eiffel","user":null,"flags":{{"newNav":true}}}};</script>
<script>{webpack_runtime(55_000)}</script>
<script src="/static/js/2.b41502e9.chunk.js"></script><script src="/static/js/main.7d0a3c5b.chunk.js"></script>
</body></html>"""

# The same kind of app showing a spinner's word while its script loads.
LOADING_SHELL = """<!doctype html><html><head><title>Example</title><script defer src="/app.js"></script></head>
<body><div id="app"><div class="spinner" aria-busy="true">Loading…</div></div></body></html>"""

# A real page of one sentence, with what real pages carry: analytics, a tracking pixel in
# <noscript>, Cloudflare's own script that it puts into every page it serves.
SHORT_REAL_PAGE = """<!doctype html><html lang="en"><head><title>Notice | City Museum</title>
<script async src="https://www.googletagmanager.com/gtag/js?id=G-XXXX"></script>
<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());</script>
</head><body><header><a href="/">Home</a></header><main><p>The museum is closed on Mondays.</p></main>
<noscript><img height="1" width="1" src="https://www.facebook.com/tr?id=1&ev=PageView&noscript=1"/></noscript>
<script>(function(){var a=document.createElement('script');
a.src='/cdn-cgi/challenge-platform/scripts/jsd/main.js';document.head.appendChild(a)})();</script></body></html>"""

# An article about bot challenges: it quotes their words and is still an article.
ARTICLE_ABOUT_CHALLENGES = (
    "<html><head><title>Why websites ask if you are a robot</title><script src='/a.js'></script></head><body><article>"
    + "<p>Sites behind Cloudflare show a page saying Just a moment while they are checking your browser, and some "
    "ask you to verify you are human. Researchers measured how often these challenges appear and who they stop; "
    "scrapers and screen readers alike meet them, and the words on the page rarely say what is going on.</p>"
    * 6
    + "</article></body></html>"
)


@pytest.mark.parametrize(
    ("html", "reason"),
    [
        pytest.param(CLOUDFLARE_CHALLENGE, BOT_CHALLENGE, id="cloudflare-managed-challenge"),
        pytest.param(CLOUDFLARE_BROWSER_CHECK, BOT_CHALLENGE, id="cloudflare-browser-check"),
        pytest.param(DATADOME_CAPTCHA, BOT_CHALLENGE, id="datadome-captcha"),
        pytest.param(SPA_SHELL, JAVASCRIPT_SHELL, id="react-app-shell"),
        pytest.param(LOADING_SHELL, JAVASCRIPT_SHELL, id="shell-with-a-spinner"),
    ],
)
def test_it_recognises_a_page_that_stands_in_for_the_real_one(html, reason):
    assert stand_in_reason(html) == reason


@pytest.mark.parametrize(
    "html",
    [
        pytest.param(SHORT_REAL_PAGE, id="one-sentence-with-scripts-and-cloudflare"),
        pytest.param("<html><body><p>Yes.</p><script>track()</script></body></html>", id="one-word"),
        pytest.param(ARTICLE_ABOUT_CHALLENGES, id="an-article-quoting-a-challenge"),
        pytest.param("<html><body></body></html>", id="empty-without-scripts"),
        pytest.param("", id="nothing"),
    ],
)
def test_a_real_page_however_short_is_not_a_stand_in(html):
    assert stand_in_reason(html) is None


def test_the_sizes_are_realistic():
    # The shell is as large as real app shells: size is no hint that text is there.
    assert len(SPA_SHELL) > 50_000 and len(CLOUDFLARE_CHALLENGE) > 2_000


def test_the_extractor_reads_words_from_a_shell_that_are_not_the_page():
    """Why the recogniser is needed: the shell's description passes for a page's text."""
    assert "Eiffel Tower" in read_html(SPA_SHELL).text


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        ("the page answered HTTP 401", "HTTP 401"),
        ("the page answered HTTP 403", "HTTP 403"),
        ("the page answered HTTP 429", "HTTP 429"),
        ("the page answered HTTP 451", "HTTP 451"),
        ("the page did not answer within 10 s", "timed out"),
        ("the page was too slow to download", "timed out"),
        ("the page is empty", "no text"),
        ("the page has no readable text", "no text"),
        ("the PDF has no text (a scanned document?)", "no text"),
        (CHALLENGE_ERROR, BOT_CHALLENGE),
        (SHELL_ERROR, JAVASCRIPT_SHELL),
        (stand_in_error(BOT_CHALLENGE), BOT_CHALLENGE),
        (stand_in_error(JAVASCRIPT_SHELL), JAVASCRIPT_SHELL),
        (f"{CHALLENGE_ERROR} (HTTP 503)", "a bot challenge, HTTP 503"),
        (f"{CHALLENGE_ERROR} (HTTP 403)", "a bot challenge, HTTP 403"),
    ],
)
def test_a_refusal_is_one_a_snippet_stands_in_for(error, reason):
    assert unread_reason(error) == reason


@pytest.mark.parametrize(
    "error",
    [
        "the page answered HTTP 404",
        "the page answered HTTP 503",
        "could not connect to the page's server",
        "not a web page (image/png)",
        "refused before connecting: the address names no host",
        "the page redirected to another site: example.com is on a blocked list",
    ],
)
def test_other_failures_are_not(error):
    assert unread_reason(error) is None


def test_the_snippet_is_judged_or_the_title_when_there_is_none():
    assert snippet_passage("Eiffel Tower", "  The tower is\n330 m tall. ") == "The tower is 330 m tall."
    assert snippet_passage(" Eiffel  Tower ", "") == "Eiffel Tower"


# --- a challenge sent with an error status (503 most often: Cloudflare, DDoS-Guard, Sucuri)

# DDoS-Guard's check, as it answers 503 (its scripts under /.well-known/ddos-guard/).
DDOS_GUARD_CHALLENGE = """<!doctype html><html><head><title>DDoS-Guard</title><meta charset="utf-8">
<link rel="stylesheet" href="/.well-known/ddos-guard/ddg-captcha-page/index.css">
<script defer src="/.well-known/ddos-guard/js-challenge/index.js"></script></head><body><div class="container">
<h1 id="title">Checking your browser before accessing example-news.com</h1>
<p id="description">This process is automatic. Your browser will redirect to your requested content shortly.</p>
</div></body></html>"""

# Sucuri's firewall check: a script that sets a cookie and reloads, nothing to read.
SUCURI_CHALLENGE = """<html><head><title>You are being redirected...</title>
<noscript>Javascript is required. Please enable javascript before you are allowed to see this page.</noscript>
<script>var s={},u,c,U,r,i,l=0,a,e=eval,w=String.fromCharCode,sucuri_cloudproxy_js='',S='cz0iMSIuc3Vic3RyKDAsMSk=';
L=S.length;U=0;r='';var A='ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';</script>
</head><body></body></html>"""

# What servers send with a 503 of their own: nginx's page, Apache's, and Cloudflare's page for an
# origin that is down (Cloudflare's name and a ray id, no challenge).
NGINX_503 = """<html><head><title>503 Service Temporarily Unavailable</title></head><body>
<center><h1>503 Service Temporarily Unavailable</h1></center><hr><center>nginx</center></body></html>"""
APACHE_503 = """<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN"><html><head><title>503 Service Unavailable</title>
</head><body><h1>Service Unavailable</h1><p>The server is temporarily unable to service your request due to
maintenance downtime or capacity problems. Please try again later.</p></body></html>"""
CLOUDFLARE_ORIGIN_DOWN = """<!DOCTYPE html><html lang="en-US"><head><title>example-news.com | 503: Service
temporarily unavailable</title><link rel="stylesheet" href="/cdn-cgi/styles/main.css"></head><body>
<div id="cf-wrapper"><div id="cf-error-details"><h1>Service temporarily unavailable</h1><span>Error code 503</span>
<p>The web server reported a temporary error. Please try again in a few minutes.</p>
<p>Cloudflare Ray ID: 8b2a41c0fd1e7a3c</p><p>Performance &amp; security by Cloudflare</p></div></div>
<script>(function(){var a=document.createElement('script');a.src='/cdn-cgi/challenge-platform/scripts/jsd/main.js';
document.head.appendChild(a)})();</script></body></html>"""


@pytest.mark.parametrize(
    ("status", "html"),
    [
        pytest.param(503, CLOUDFLARE_CHALLENGE, id="cloudflare-managed-challenge-503"),
        pytest.param(503, CLOUDFLARE_BROWSER_CHECK, id="cloudflare-browser-check-503"),
        pytest.param(503, DDOS_GUARD_CHALLENGE, id="ddos-guard-503"),
        pytest.param(503, SUCURI_CHALLENGE, id="sucuri-503"),
        pytest.param(403, DATADOME_CAPTCHA, id="datadome-403"),
        pytest.param(429, CLOUDFLARE_CHALLENGE, id="cloudflare-429"),
    ],
)
def test_a_challenge_sent_with_an_error_status_is_a_refusal(status, html):
    failure = error_page_failure(status, html)

    assert failure == f"{CHALLENGE_ERROR} (HTTP {status})"
    assert unread_reason(failure) == f"a bot challenge, HTTP {status}"


def test_a_challenge_cut_to_the_start_the_fetcher_keeps_is_still_one():
    assert error_page_failure(503, CLOUDFLARE_CHALLENGE[:600]) == f"{CHALLENGE_ERROR} (HTTP 503)"


@pytest.mark.parametrize(
    ("status", "html"),
    [
        pytest.param(503, NGINX_503, id="nginx-503"),
        pytest.param(503, APACHE_503, id="apache-503"),
        pytest.param(503, CLOUDFLARE_ORIGIN_DOWN, id="cloudflare-origin-down-503"),
        pytest.param(503, "<h1>Service unavailable</h1>", id="bare-503"),
        pytest.param(503, "", id="empty-503"),
        pytest.param(404, LOADING_SHELL, id="javascript-app-404"),
    ],
)
def test_a_servers_own_error_page_is_not_a_refusal(status, html):
    """A plain 503 stays the server's failure, one a retry may change, with no snippet for it."""
    assert error_page_failure(status, html) is None
    assert unread_reason(f"the page answered HTTP {status}") is None


@pytest.mark.parametrize(
    ("error", "gone"),
    [
        ("the page answered HTTP 404", True),
        ("the page answered HTTP 410", True),
        ("the page's host name does not resolve (no such domain)", True),
        ("the page answered HTTP 403", False),
        ("the page answered HTTP 4040", False),
        ("could not connect to the page's server", False),
        ("the page did not answer within 10 s", False),
    ],
)
def test_it_tells_a_page_that_does_not_exist(error, gone):
    assert page_gone(error) is gone
