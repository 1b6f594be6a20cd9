"""The secret sanitizer: realistic secrets are masked, ordinary page and log text is not."""

from __future__ import annotations

import pytest

from healerd.adapters.external import sanitize_for_healer
from healerd.core.sanitize import find_secrets, is_secret_header, looks_like_key, mask_mapping, mask_text, mask_url

# (text, a fragment that must be gone, what must be there instead, the kind find_secrets names)
SECRETS = [
    ("GET https://api.shop.example/v1/items?api_key=9a8b7c6d5e4f3a2b&page=2", "9a8b7c6d5e4f3a2b",
     "?api_key=***&page=2", "secret_param"),
    ("https://maps.example.com/js?key=AIzaSyD_c549QkiO5U2OlGoRSHW8qzcfkKRWGvs&libraries=places",
     "c549QkiO5U2OlGoRSHW8", "?key=***&libraries=places", "secret_param"),
    ("redirect to /callback?code=4/0AfJohXn1LZ&state=xyz", "4/0AfJohXn1LZ", "?code=***&state=xyz", "secret_param"),
    ("fetch https://cdn.example.com/a.jpg?X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20240101&X-Amz-Signature="
     "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404", "aeeed9bbccd4d02ee5c",
     "X-Amz-Signature=***", "secret_param"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0",
     "dozjgNryP4J3jVmNHl0w5N", "Authorization: Bearer ***", "authorization_header"),
    ("headers={'Authorization': 'Basic dXNlcjpwYXNzd29yZA==', 'Accept': 'text/html'}", "dXNlcjpwYXNzd29yZA",
     "'Authorization': 'Basic ***', 'Accept': 'text/html'", "authorization_header"),
    ("sent token Bearer abc123def456ghi789 upstream", "abc123def456ghi789", "Bearer ***", "bearer_token"),
    ("proxy https://scraper:hunter2@proxy.example.net:3128/", "hunter2", "https://***:***@proxy.example.net:3128/",
     "url_credentials"),
    ("clone https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/acme/site.git", "16C7e42F292c",
     "https://***@github.com/acme/site.git", "url_credentials"),
    ("Cookie: sessionid=38afes7a8b0c; csrftoken=Zq81kd", "38afes7a8b0c", "Cookie: ***", "cookie_header"),
    ("Set-Cookie: session=eyJ1c2VyIjoxfQ.ZmVhZA; Path=/; HttpOnly", "ZmVhZA", "Set-Cookie: ***", "cookie_header"),
    ("aws key AKIAIOSFODNN7EXAMPLE in config", "IOSFODNN7EXAMPLE", "AKIA***", "aws_access_key"),
    ("AWS secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY found", "wJalrXUtnFEMI", "AWS secret *** found",
     "aws_secret_key"),
    ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "aws_secret_access_key=***",
     "secret_assignment"),
    ("GITHUB_TOKEN ghp_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F", "ghp_***", "github_token"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ", "11ABCDEFG",
     "github_pat_***", "github_token"),
    ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGh", "xoxb-***", "slack_token"),
    ("OPENAI_API_KEY=sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz012345", "Ab3dEfGh", "OPENAI_API_KEY=***",
     "secret_assignment"),
    ("using sk-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789abcdEFGH for the healer", "Ab3dEfGh", "using sk-*** for",
     "openai_key"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc and pk_live_51K8lKDCAAR38864M0eVmB16", "4eC39HqLyjW",
     "stripe sk_live_*** and pk_live_***", "stripe_key"),
    ("jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
     "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "SflKxwRJSMeKKF2QT4", "jwt eyJ***", "jwt"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
     "-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA", "-----BEGIN RSA PRIVATE KEY-----***-----END RSA",
     "private_key"),
    ("contact chef.mario+news@example.com today", "chef.mario", "contact ***@example.com today", "email"),
    ('{"password": "hunter2!", "user": "bob"}', "hunter2", '{"password": "***", "user": "bob"}', "secret_assignment"),
    ("client_secret=Zx9-QpL2_mN8vB4cR7tY", "Zx9-QpL2", "client_secret=***", "secret_assignment"),
    ("csrf value Xk9mP2qR7tV4wY8zA3bC6dE1fG5hJ0kLq in form", "Xk9mP2qR7tV4", "csrf value *** in form",
     "high_entropy_key"),
    ("api answered with key 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", "9f86d0818", "with key ***",
     "high_entropy_key"),
]

# Ordinary text that must come out unchanged.
ORDINARY = [
    '<li class="recipe-ingredients__list-item wprm-recipe-ingredient-notes-faded">2 cups flour</li>',
    '<div class="bde-preset-b2510da9-ef2b-461a-bd5e-5bfcd8c4c3c8 breakdance-link">x</div>',
    "css-1x2y3z4 __className_a1b2c3 styles_recipeCard__Xk3Lm Shared_smoothScroll__AUidJ",
    "sk-header-navigation-container-wrapper task-list-item-checkbox-container-wrapper",
    "https://www.example.com/recipes/2024/05/chocolate-chip-cookies-with-brown-butter/?page=2&sort=price&utm_source=x",
    "/wp-content/uploads/2023/04/Chocolate-Chip-Cookies-Recipe-1-1024x683.jpg",
    "https://cdn.site.com/img/9f86d081884c7d659a2feaa0c55ad015.jpg",
    "snapshot sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 stored",
    "Price $1,299.00 (was €1.499,00), 7 products, 3.5 stars, -12.5%",
    "last success 2026-11-22T10:00:00Z, next run 2026-11-22 10:15, 22/11/2026",
    "count 1234567890123456789012345678901234567890 rows",
    "fix memory issue 550e8400-e29b-41d4-a716-446655440000 applied (diff signature 985a0ea5d7e47ad0)",
    "ThisIsAVeryLongJavaClassNameForTestingPurposes and renderRecipeCardComponentV2WithSidebarLayout",
    "Basic instructions for Bearer bonds; the cookie jar: full; HTTP status code=404",
    "retina logo@2x.png and icon@3x.webp",
    "selector table.stats > tr.player > td.name matched 0 of 25 nodes; max_tokens=400",
    "PARSE_ERROR: required field score is null (td.score matched nothing)",
    "https://shop.example/search?author=ann&keyword=sale&zip_code=1010&max_tokens=5&passage=3",
    "",
]

# Secrets both sanitizers must catch alike: mask_text (fetch errors, logs, alerts, the fix memory) and
# sanitize_for_healer (what the external healer sees). (text, fragment that must be gone, hint left)
BOTH_SIDES = [
    ("GET https://shop.example/api?api_token=Qw3rTy9Zx&page=2", "Qw3rTy9Zx", "?api_token=***&page=2"),
    ("GET https://shop.example/api?authToken=Qw3rTy9Zx&page=2", "Qw3rTy9Zx", "?authToken=***&page=2"),
    ("GET https://shop.example/api?page=2&accessKey=Qw3rTy9Zx", "Qw3rTy9Zx", "&accessKey=***"),
    ("fetch https://shop.example/cart?PHPSESSID=8f2k3j4h5g6f7d8s&step=2", "8f2k3j4h5g6f7d8s",
     "?PHPSESSID=***&step=2"),
    ("fetch https://shop.example/cart?step=2&sessid=a1b2c3d4", "a1b2c3d4", "&sessid=***"),
    ("push with ghp_16C7e42F292c6912E7710c838347Ae178B4a done", "16C7e42F292c", "with ghp_*** done"),
    ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGh", "slack xoxb-***"),
    ("slack xoxp-1234567890-0987654321-AbCdEf", "0987654321", "slack xoxp-***"),
    ("charge with sk_live_4eC39HqLyjWDarjt now", "4eC39HqLyjW", "with sk_live_*** now"),
    ("charge with sk_test_4eC39HqLyjWDarjt now", "4eC39HqLyjW", "with sk_test_*** now"),
    ("restricted rk_live_51K8lKDCAAR38864M0 key", "51K8lKDC", "restricted rk_live_*** key"),
    ("login failed, password: hunter2! given", "hunter2", "password: ***"),
    ("login failed, password=hunter2! given", "hunter2", "password=***"),
    ("session token: 9f86d081884c7d65 expired", "9f86d081884c7d65", "token: ***"),
    ("X-CSRF-Token: Zq81kdAb3xYw\nAccept: text/html", "Zq81kdAb3xYw", "X-CSRF-Token: ***\nAccept: text/html"),
]


@pytest.mark.parametrize("text,gone,expected,kind", SECRETS, ids=[s[3] + str(i) for i, s in enumerate(SECRETS)])
def test_realistic_secrets_are_masked_with_a_hint(text, gone, expected, kind):
    masked = mask_text(text)
    assert gone not in masked
    assert expected in masked
    assert kind in find_secrets(text)
    assert find_secrets(masked) == []


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_not_masked(text):
    assert mask_text(text) == text
    assert find_secrets(text) == []


@pytest.mark.parametrize("mask", [mask_text, sanitize_for_healer], ids=["mask_text", "sanitize_for_healer"])
@pytest.mark.parametrize("text,gone,hint", BOTH_SIDES, ids=[str(i) for i in range(len(BOTH_SIDES))])
def test_both_sanitizers_mask_the_same_secrets(mask, text, gone, hint):
    out = mask(text)
    assert gone not in out and hint in out, out
    assert mask(out) == out


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_not_masked_for_the_healer_either(text):
    assert sanitize_for_healer(text) == text


def test_only_secret_named_headers_are_secret():
    for name in ("Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "X-Auth-Token", "X-CSRF-Token",
                 "X-Goog-Api-Key", "X-Access-Key", "X-Session", "X-Signature", "api-key"):
        assert is_secret_header(name), name
    for name in ("User-Agent", "Referer", "Accept-Language", "Accept", "X-Client", "X-Requested-With", "Origin",
                 "Cache-Control", "X-Forwarded-For", None):
        assert not is_secret_header(name), name


def test_masking_is_idempotent():
    for text in [s[0] for s in SECRETS] + [s[0] for s in BOTH_SIDES] + ORDINARY:
        once = mask_text(text)
        assert mask_text(once) == once, text


def test_extra_secrets_are_masked_literally_also_url_encoded():
    value = "s3ss!on/val+ue"
    text = f"cookie value {value} and in a url ?x=s3ss%21on%2Fval%2Bue done"
    masked = mask_text(text, extra_secrets=[value, "en", None])
    assert value not in masked and "s3ss%21on" not in masked
    assert masked == "cookie value *** and in a url ?x=*** done"
    assert find_secrets(text, [value]) == ["extra_secret"]
    # short literals would mask ordinary words: left to the other rules
    assert mask_text("en route", extra_secrets=["en"]) == "en route"


def test_mask_url():
    assert mask_url("https://u:p4ss@example.com/x?token=abc&page=1") == "https://***:***@example.com/x?token=***&page=1"
    assert mask_url("https://example.com/list?page=3&sort=asc") == "https://example.com/list?page=3&sort=asc"


def test_mask_mapping_masks_secret_keys_deeply_and_keeps_the_rest():
    data = {
        "url": "https://shop.example/p?api_key=abc123",
        "headers": {"User-Agent": "healerd/1.0", "X-Api-Key": "k-123", "Accept": "text/html",
                    "X-Custom": "opaque"},
        "cookies": {"sessionid": "abc", "lang": "en"},
        "accessToken": "t0k3n",
        "nested": [{"password": "p", "note": "Bearer abcdef1234567"}, 5, None],
        "max_tokens": 400,
        "diff_signature": "985a0ea5d7e47ad0",
        "fields": {"price": {"css": "span.price", "type": "float"}},
        "every": 900.0,
        "paused": False,
    }
    out = mask_mapping(data)
    assert out == {
        "url": "https://shop.example/p?api_key=***",
        "headers": {"User-Agent": "healerd/1.0", "X-Api-Key": "***", "Accept": "text/html", "X-Custom": "***"},
        "cookies": {"sessionid": "***", "lang": "***"},
        "accessToken": "***",
        "nested": [{"password": "***", "note": "Bearer ***"}, 5, None],
        "max_tokens": 400,
        "diff_signature": "985a0ea5d7e47ad0",
        "fields": {"price": {"css": "span.price", "type": "float"}},
        "every": 900.0,
        "paused": False,
    }
    assert data["headers"]["X-Api-Key"] == "k-123"  # the input is not modified
    assert mask_mapping(out) == out


def test_find_secrets_names_each_kind_once():
    text = ("AKIAIOSFODNN7EXAMPLE AKIAIOSFODNN7EXAMPL2 Authorization: Bearer abc.def.ghi123\n"
            "mail ops@example.org")
    assert find_secrets(text) == ["authorization_header", "aws_access_key", "email"]


def test_looks_like_key():
    assert looks_like_key("Xk9mP2qR7tV4wY8zA3bC6dE1fG5hJ0kLq")
    assert looks_like_key("9f86d081884c7d659a2feaa0c55ad015")
    assert not looks_like_key("recipe-ingredients__list-item-notes-2")
    assert not looks_like_key("550e8400-e29b-41d4-a716-446655440000")
    assert not looks_like_key("short1A")
    assert not looks_like_key("a" * 40)


def test_non_string_input_is_handled():
    assert mask_text(None) == ""
    assert mask_text(12345) == "12345"
    assert find_secrets(None) == []


def test_a_java_session_id_in_a_url_is_masked():
    # jsessionid is a session cookie carried in the URL: whoever has it is logged in as the user.
    for url in ("http://shop.example/cart?jsessionid=1A2B3C4D", "http://shop.example/cart?page=2&JSESSIONID=1A2B3C4D"):
        masked = mask_url(url)
        assert "1A2B3C4D" not in masked and "jsessionid=***" in masked.lower(), masked
