"""The one reading of a web address that the domain lists, the fetcher and the API share."""

import pytest

from verification.pipeline.urls import UnsafeAddress, parse_web_address, web_host


@pytest.mark.parametrize(
    ("url", "expected_url", "host"),
    [
        ("https://Example.COM", "https://example.com/", "example.com"),
        ("http://example.com:8080/a?b=1#frag", "http://example.com:8080/a?b=1", "example.com"),
        ("http://example.com:/a", "http://example.com/a", "example.com"),
        # As a browser reads them: percent-decoded, then UTS 46 (no transitional mapping: ß stays).
        ("http://local%68ost:8000/p", "http://localhost:8000/p", "localhost"),
        ("http://ＬＯＣＡＬＨＯＳＴ/", "http://localhost/", "localhost"),
        ("http://straße.test/", "http://xn--strae-oqa.test/", "xn--strae-oqa.test"),
        ("http://bücher.example/", "http://xn--bcher-kva.example/", "xn--bcher-kva.example"),
        ("http://1.2.3.4./", "http://1.2.3.4/", "1.2.3.4"),
        ("http://[::1]:8000/", "http://[::1]:8000/", "::1"),
        ("https://a_b.example.com/", "https://a_b.example.com/", "a_b.example.com"),
    ],
)
def test_an_address_is_read_and_rebuilt_around_its_host(url, expected_url, host):
    address = parse_web_address(url)

    assert (address.url, address.host) == (expected_url, host)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://blocked.test\\@1.2.3.4/page", "backslash"),
        ("http://1.2.3.4/a\\b", "backslash"),
        ("http://user@example.com/", "user name"),
        ("http://blocked.test:80@1.2.3.4/", "user name"),
        ("http://a@blocked.test@1.2.3.4/", "user name"),
        ("http://bl\tocked.test/", "tab"),
        ("http://blocked.test\n/", "line break"),
        ("http://bl\rocked.test/", "line break"),
        ("http://exa mple.org/", "space"),
        ("http://ex\x00ample.org/", "control character"),
        ("http://x%2Fy.test/", "invalid host name"),
        ("http://x%40y.test/", "invalid host name"),
        ("http://%ff.test/", "invalid host name"),
        ("http://exa%20mple.test/", "invalid host name"),
        # Old forms of IPv4 addresses a browser and the resolver take, and the lists would not.
        ("http://0x7f.1/", "invalid host name"),
        ("http://2130706433/", "invalid host name"),
        ("http://0177.0.0.1/", "invalid host name"),
        ("http:blocked.test/", "no host name"),
        ("http:///blocked.test/", "no host name"),
        ("http://", "no host name"),
        ("ftp://example.com/", "only http:// and https://"),
        ("http://[::1", "not a valid URL"),
        ("http://example.com:99999/", "not a valid URL"),
        ("http://[fe80::1%25eth0]/", "read differently"),
    ],
)
def test_an_address_parsers_read_differently_is_refused_with_the_reason(url, says):
    with pytest.raises(UnsafeAddress, match=says):
        parse_web_address(url)


@pytest.mark.parametrize(
    ("written", "host"),
    [("Example.COM", "example.com"), ("[::1]", "::1"), ("straße.test", "xn--strae-oqa.test"), ("a b", "")],
)
def test_a_host_as_written_is_given_in_the_form_the_fetcher_contacts(written, host):
    assert web_host(written) == host
