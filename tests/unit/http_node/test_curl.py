"""The cURL-line parser: flags, quoting, continuations and the errors it reports."""

from __future__ import annotations

import base64

import msgspec
import pytest

from services.tool_sandbox.http_node import CurlError, CurlRequest, parse_curl

pytestmark = pytest.mark.unit

FORM = ("Content-Type", "application/x-www-form-urlencoded")


def basic(credentials: str) -> str:
    return "Basic " + base64.b64encode(credentials.encode()).decode()


def test_bare_url_is_a_get_without_body() -> None:
    req = parse_curl("curl https://api.example.com/v1/items")
    assert req == CurlRequest(method="GET", url="https://api.example.com/v1/items")
    assert (req.headers, req.body, req.follow_redirects, req.timeout_s) == ([], None, False, None)
    assert (req.insecure, req.notes) == (False, [])


def test_curl_prefix_is_optional() -> None:
    assert parse_curl("http://h/x") == parse_curl("curl http://h/x")
    assert parse_curl("CURL http://h/x").url == "http://h/x"


def test_struct_is_frozen() -> None:
    req = parse_curl("http://h/")
    with pytest.raises(AttributeError):
        req.method = "POST"  # type: ignore[misc]
    assert msgspec.json.decode(msgspec.json.encode(req), type=CurlRequest) == req


@pytest.mark.parametrize("flag", ["-X", "--request"])
def test_method_flag_is_upper_cased(flag: str) -> None:
    assert parse_curl(f"curl {flag} delete http://h/x").method == "DELETE"


def test_short_flag_with_attached_value() -> None:
    req = parse_curl("curl -XPUT -H'X-A: 1' -dv=1 http://h/")
    assert (req.method, req.body) == ("PUT", "v=1")
    assert ("X-A", "1") in req.headers


@pytest.mark.parametrize("flag", ["-H", "--header"])
def test_headers_keep_order_case_and_duplicates(flag: str) -> None:
    req = parse_curl(f"curl {flag} 'X-One: a b' {flag} 'x-two:c' {flag} 'X-One: again' http://h/")
    assert req.headers == [("X-One", "a b"), ("x-two", "c"), ("X-One", "again")]


def test_header_value_may_contain_colons() -> None:
    req = parse_curl('curl -H "Referer: https://x.test:8443/a" http://h/')
    assert req.headers == [("Referer", "https://x.test:8443/a")]


def test_header_special_spellings() -> None:
    req = parse_curl("curl -H 'X-Empty;' -H 'X-Gone:' -H 'nocolon' http://h/")
    assert req.headers == [("X-Empty", "")]
    assert len(req.notes) == 2


@pytest.mark.parametrize("flag", ["-d", "--data", "--data-raw", "--data-binary", "--data-ascii"])
def test_data_flags_make_a_form_post(flag: str) -> None:
    req = parse_curl(f"curl {flag} 'a=1' http://h/")
    assert (req.method, req.body) == ("POST", "a=1")
    assert req.headers == [FORM]


def test_several_data_are_joined_with_ampersand() -> None:
    req = parse_curl("curl -d a=1 --data b=2 --data-raw c=3 http://h/")
    assert req.body == "a=1&b=2&c=3"


def test_data_urlencode_follows_curl_rules() -> None:
    req = parse_curl(
        "curl --data-urlencode 'q=a b&c' --data-urlencode '=x/y' --data-urlencode 'plain é' http://h/"
    )
    assert req.body == "q=a%20b%26c&x%2Fy&plain%20%C3%A9"


def test_explicit_method_wins_over_data() -> None:
    req = parse_curl("curl -X GET -d x=1 http://h/")
    assert (req.method, req.body) == ("GET", "x=1")


def test_explicit_content_type_is_kept() -> None:
    req = parse_curl("""curl -H 'content-type: application/json' -d '{"a": 1}' http://h/""")
    assert req.headers == [("content-type", "application/json")]
    assert req.body == '{"a": 1}'


def test_json_flag_sets_json_headers() -> None:
    req = parse_curl("""curl --json '{"a": 1}' http://h/""")
    assert req.method == "POST"
    assert req.headers == [("Content-Type", "application/json"), ("Accept", "application/json")]


def test_data_from_file_is_not_read() -> None:
    req = parse_curl("curl -d @/etc/passwd http://h/")
    assert req.body == "@/etc/passwd"
    assert "not read" in req.notes[0]
    assert parse_curl("curl --data-raw @me http://h/").notes == []


@pytest.mark.parametrize("flag", ["-G", "--get"])
def test_get_moves_data_to_the_query(flag: str) -> None:
    req = parse_curl(f"curl {flag} -d q=1 --data-urlencode 'n=a b' http://h/search")
    assert (req.method, req.url, req.body) == ("GET", "http://h/search?q=1&n=a%20b", None)
    assert req.headers == []
    assert parse_curl("curl -G -d q=1 'http://h/s?x=0'").url == "http://h/s?x=0&q=1"


@pytest.mark.parametrize("flag", ["-L", "--location"])
def test_follow_redirects(flag: str) -> None:
    assert parse_curl(f"curl {flag} http://h/").follow_redirects is True


def test_url_flag() -> None:
    assert parse_curl("curl -X POST --url https://h/x -d 1").url == "https://h/x"


@pytest.mark.parametrize("flag", ["-u", "--user"])
def test_user_becomes_basic_auth(flag: str) -> None:
    req = parse_curl(f"curl {flag} 'alice:s3cr:et' http://h/")
    assert req.headers == [("Authorization", basic("alice:s3cr:et"))]


def test_user_without_password_uses_an_empty_one() -> None:
    req = parse_curl("curl -u alice http://h/")
    assert req.headers == [("Authorization", basic("alice:"))]
    assert req.notes


def test_explicit_authorization_header_wins_over_user() -> None:
    req = parse_curl("curl -u a:b -H 'Authorization: Bearer t' http://h/")
    assert req.headers == [("Authorization", "Bearer t")]


@pytest.mark.parametrize("flag", ["-k", "--insecure"])
def test_insecure_is_recorded_with_a_note(flag: str) -> None:
    req = parse_curl(f"curl {flag} https://h/")
    assert req.insecure is True
    assert "still verified" in req.notes[0]


def test_compressed_and_output_only_flags_are_accepted_silently() -> None:
    req = parse_curl("curl -sS --compressed -v -i --silent http://h/")
    assert (req.method, req.url, req.notes) == ("GET", "http://h/", [])


@pytest.mark.parametrize(("text", "seconds"), [("-m 5", 5.0), ("--max-time 0.25", 0.25)])
def test_max_time(text: str, seconds: float) -> None:
    assert parse_curl(f"curl {text} http://h/").timeout_s == seconds


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "inf"])
def test_bad_max_time_is_an_error(value: str) -> None:
    with pytest.raises(CurlError, match="-m needs a positive number"):
        parse_curl(f"curl -m {value} http://h/")


def test_user_agent_cookie_and_referer() -> None:
    req = parse_curl("curl -A 'bot/1' -b 'a=1' --cookie 'b=2' -e https://from.test/ http://h/")
    assert req.headers == [
        ("User-Agent", "bot/1"),
        ("Referer", "https://from.test/"),
        ("Cookie", "a=1; b=2"),
    ]
    long = parse_curl("curl --user-agent x --referer r http://h/")
    assert long.headers == [("User-Agent", "x"), ("Referer", "r")]


def test_cookie_file_is_not_read() -> None:
    req = parse_curl("curl -b cookies.txt http://h/")
    assert req.headers == []
    assert "not read" in req.notes[0]


def test_explicit_header_wins_over_user_agent_flag() -> None:
    req = parse_curl("curl -A flag -H 'User-Agent: header' http://h/")
    assert req.headers == [("User-Agent", "header")]


def test_combined_short_switches() -> None:
    req = parse_curl("curl -sSLk https://h/")
    assert (req.follow_redirects, req.insecure) == (True, True)


def test_head_flag() -> None:
    assert parse_curl("curl -I http://h/").method == "HEAD"


def test_unknown_flags_are_ignored_with_a_note() -> None:
    req = parse_curl("curl --http2 -Z http://h/")
    assert req.url == "http://h/"
    assert req.notes == ["unknown option --http2 ignored", "unknown option -Z ignored"]


def test_known_unsupported_flags_consume_their_value() -> None:
    req = parse_curl("curl --proxy http://proxy:3128 -o out.json -F f=@x https://h/")
    assert req.url == "https://h/"
    assert len(req.notes) == 3


def test_fail_flag_is_noted() -> None:
    assert "not errors" in parse_curl("curl --fail http://h/").notes[0]


def test_stray_argument_is_noted() -> None:
    req = parse_curl("curl http://h/ extra")
    assert req.url == "http://h/"
    assert "extra" in req.notes[0]


def test_double_dash_ends_options() -> None:
    assert parse_curl("curl -X POST -- http://h/").method == "POST"


def test_line_continuations() -> None:
    text = "curl -X POST \\\n  -H 'A: 1' \\  \n  -d 'x=1' \\\r\n  https://h/path"
    req = parse_curl(text)
    assert (req.method, req.url, req.body) == ("POST", "https://h/path", "x=1")
    assert req.headers[0] == ("A", "1")


def test_quoting_rules() -> None:
    req = parse_curl(
        """curl -H "X-Q: say \\"hi\\"" -H 'X-S: it is "raw" $HOME' -d 'a'"b"c http://h/"""
    )
    assert req.headers[:2] == [("X-Q", 'say "hi"'), ("X-S", 'it is "raw" $HOME')]
    assert req.body == "abc"


def test_multiline_json_body_inside_quotes_is_kept() -> None:
    req = parse_curl("""curl -d '{\n  "a": 1\n}' http://h/""")
    assert req.body == '{\n  "a": 1\n}'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("curl -X POST", "no URL"),
        ("", "no URL"),
        ("curl example.com", "no URL"),
        ("curl -H 'X: 1 http://h/", "unbalanced quotes"),
        ('curl -d "{ http://h/', "unbalanced quotes"),
        ("curl ftp://h/file", "only http"),
        ("curl --url file:///etc/passwd", "only http"),
        ("curl --url h.example/x", "only http"),
        ("curl http://", "only http"),
        ("curl http://a/ https://b/", "several URLs"),
        ("curl http://h/ -H", "needs a value"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(CurlError, match=message) as caught:
        parse_curl(text)
    assert isinstance(caught.value, ValueError)
    assert str(caught.value).startswith("invalid cURL command: ")
