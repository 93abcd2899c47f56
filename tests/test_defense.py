"""Memory defense: every pattern finds realistic fakes, every policy behaves, ordinary talk is left alone.

All secrets below are generated here (seeded RNG, checksums computed) - none is a real credential.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest
from growth import LINEAR_BOUND, growth

from memwrap.defense.policy import KINDS, DefenseResult, Finding, apply_policy, redact, scan

LOCOMO_DEV = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo_dev5.json"

# --------------------------------------------------------------------------------------------------
# Fake-secret factories
# --------------------------------------------------------------------------------------------------

_rng = random.Random(20240508)

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
ALNUM = LOWER + UPPER + DIGITS
HEX = DIGITS + "abcdef"
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"


def rand(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def alnum(n: int) -> str:
    """Random alphanumerics that always mix classes, like a real token."""
    return rand(UPPER, 1) + rand(DIGITS, 1) + rand(LOWER, 1) + rand(ALNUM, n - 3)


def urlsafe(n: int) -> str:
    # Start and end on a letter so the test string's boundaries are unambiguous.
    return rand(UPPER, 1) + rand(DIGITS, 1) + rand(URLSAFE, n - 3) + rand(LOWER, 1)


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def luhn_complete(prefix: str, length: int) -> str:
    body = prefix + rand(DIGITS, length - len(prefix) - 1)
    total = 0
    for index, char in enumerate(reversed(body)):
        digit = int(char)
        if index % 2 == 0:  # these positions are doubled once the check digit is appended
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return body + str((10 - total % 10) % 10)


def group(number: str, sizes: list[int], sep: str) -> str:
    parts, at = [], 0
    for size in sizes:
        parts.append(number[at : at + size])
        at += size
    return sep.join(parts)


def iban(country: str, bban: str) -> str:
    rearranged = bban + country + "00"
    numeric = int("".join(str(int(c, 36)) for c in rearranged))
    return f"{country}{98 - numeric % 97:02d}{bban}"


def iban_print(value: str) -> str:
    return " ".join(value[i : i + 4] for i in range(0, len(value), 4))


CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def cn_id(region: str, birth: str, want_x: bool = False) -> str:
    while True:
        first17 = region + birth + rand(DIGITS, 3)
        check = "10X98765432"[sum(int(d) * w for d, w in zip(first17, CN_WEIGHTS, strict=True)) % 11]
        if want_x == (check == "X"):
            return first17 + check


def ssn() -> str:
    area = _rng.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}-{_rng.randint(1, 99):02d}-{_rng.randint(1, 9999):04d}"


def jwt(claims: dict[str, object]) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps(claims).encode())
    return f"{header}.{payload}.{urlsafe(43)}"


def discord_bot_token() -> str:
    bot_id = str(_rng.randint(10**17, 10**19 - 1))
    return f"{b64url(bot_id.encode())}.{urlsafe(6)}.{urlsafe(38)}"


def pem_body(lines: int, width: int = 64) -> list[str]:
    return [rand(B64, width) for _ in range(lines)] + [rand(B64, 20) + "=="]


def pem(label: str, lines: int = 6) -> tuple[str, str]:
    body = pem_body(lines)
    block = f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----"
    return block, body[2]


BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


# --------------------------------------------------------------------------------------------------
# True positives: (kind, text, secret-substring-that-must-vanish)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    kind: str
    text: str
    secret: str

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.secret[:12]}"


def _cases() -> list[Case]:
    c: list[Case] = []

    def add(kind: str, template: str, secret: str) -> None:
        c.append(Case(kind, template.format(s=secret), secret))

    # --- LLM vendors ---
    add("anthropic_key", "我的密钥是{s}谢谢", "sk-ant-api03-" + urlsafe(93) + "AA")
    add("anthropic_key", "ANTHROPIC_API_KEY={s}", "sk-ant-admin01-" + urlsafe(80) + "AA")
    add("anthropic_key", 'client = Anthropic(api_key="{s}")', "sk-ant-api03-" + urlsafe(93) + "AA")
    add("openai_key", "我的密钥是{s}谢谢", "sk-proj-" + urlsafe(156))
    add("openai_key", "export OPENAI_API_KEY={s}", "sk-svcacct-" + urlsafe(100))
    add("openai_key", "old key: {s} (rotated?)", "sk-" + alnum(20) + "T3BlbkFJ" + alnum(20))
    add("openrouter_key", "use {s} for openrouter", "sk-or-v1-" + rand(HEX, 64))
    add("openrouter_key", "key={s}", "sk-or-v1-" + rand(HEX, 64))
    add("generic_sk_key", "deepseek key {s} works", "sk-" + rand(HEX, 32))
    add("generic_sk_key", "moonshot：{s}。", "sk-" + alnum(48))
    add("google_api_key", "gemini key is {s}", "AIza" + urlsafe(35))
    add("google_api_key", "https://maps.googleapis.com/maps/api/js?key={s}&callback=x", "AIza" + urlsafe(35))
    add("groq_key", "GROQ_API_KEY={s}", "gsk_" + alnum(52))
    add("groq_key", "try {s} on groq", "gsk_" + alnum(52))
    add("huggingface_token", "huggingface-cli login --token {s}", "hf_" + alnum(34))
    add("huggingface_token", "HF_TOKEN={s}", "hf_" + alnum(34))
    add("replicate_token", "REPLICATE_API_TOKEN={s}", "r8_" + alnum(37))
    add("replicate_token", "replicate token {s}", "r8_" + alnum(37))
    add("perplexity_key", "pplx key: {s}", "pplx-" + alnum(48))
    add("perplexity_key", "Authorization header uses {s}", "pplx-" + alnum(48))
    add("xai_key", "grok key {s}", "xai-" + alnum(80))
    add("xai_key", "XAI_API_KEY={s}", "xai-" + alnum(80))
    add("langsmith_key", "LANGSMITH_API_KEY={s}", "lsv2_pt_" + rand(HEX, 32) + "_" + rand(HEX, 10))
    add("langsmith_key", "service key {s}", "lsv2_sk_" + rand(HEX, 32) + "_" + rand(HEX, 10))
    add("cohere_key", "COHERE_API_KEY={s}", alnum(40))
    add("cohere_key", 'cohere_api_key: "{s}"', alnum(40))

    # --- cloud ---
    add("aws_access_key", "aws_access_key_id = {s}", "AKIA" + rand(UPPER + DIGITS, 16))
    add("aws_access_key", "临时凭证{s}过期了", "ASIA" + rand(UPPER + DIGITS, 16))
    add("aws_secret_key", "aws_secret_access_key = {s}", rand(B64, 40))
    add("aws_secret_key", '{{"AccessKeyId": "x", "SecretAccessKey": "{s}"}}', rand(B64, 40))
    # Bare, unlabelled: AWS's own documentation example, and a line of a pasted credentials dump.
    add("aws_secret_key", "my aws secret is {s} ok", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    add("aws_secret_key", "AKIA-less dump:\n{s}\n", "Zq8r/2LmNw+Xp4Ts7VbKc1YhDf9GjE3uQa6oRi0s")
    add("aws_session_token", "aws_session_token={s}", rand(B64, 300))
    add("aws_session_token", 'AWS_SESSION_TOKEN="{s}"', rand(B64, 200))
    add("gcp_private_key_id", '{{"type": "service_account", "private_key_id": "{s}"}}', rand(HEX, 40))
    add("gcp_private_key_id", '"project_id": "demo",\n  "private_key_id": "{s}",', rand(HEX, 40))
    add("google_oauth_secret", "client secret {s}", "GOCSPX-" + urlsafe(28))
    add("google_oauth_secret", '"client_secret":"{s}"', "GOCSPX-" + urlsafe(28))
    add("google_oauth_token", "access token {s}", "ya29." + urlsafe(120))
    add("google_oauth_token", "Bearer {s}", "ya29.a0" + urlsafe(150))
    add(
        "azure_storage_key",
        "DefaultEndpointsProtocol=https;AccountName=demo;AccountKey={s};EndpointSuffix=core.windows.net",
        rand(B64, 86) + "==",
    )
    add("azure_storage_key", "AccountName=x;AccountKey={s}", rand(B64, 86) + "==")
    add(
        "azure_shared_access_key",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={s}",
        rand(B64, 43) + "=",
    )
    add("azure_shared_access_key", "HostName=h.azure-devices.net;SharedAccessKey={s}", rand(B64, 43) + "=")
    sig1 = rand(B64, 43).replace("+", "%2B").replace("/", "%2F") + "%3D"
    add(
        "azure_sas_signature",
        "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sp=r&se=2030-01-01T00:00:00Z&sig={s}",
        sig1,
    )
    add("azure_sas_signature", "?sv=2021-06-08&ss=b&srt=o&sig={s}&spr=https", rand(ALNUM, 44))
    add("azure_ad_client_secret", "AZURE_CLIENT_SECRET={s}", alnum(3) + "8Q~" + rand(ALNUM + "_~.-", 33) + "a")
    add("azure_ad_client_secret", "entra secret: {s}", alnum(3) + "7Q~" + rand(ALNUM + "_~.-", 33) + "b")
    add("digitalocean_token", "DIGITALOCEAN_TOKEN={s}", "dop_v1_" + rand(HEX, 64))
    add("digitalocean_token", "oauth {s}", "doo_v1_" + rand(HEX, 64))
    add("heroku_key", "heroku token {s}", "HRKU-" + urlsafe(60))
    add("heroku_key", "HEROKU_API_KEY={s}", "5b2e6f1a-3c4d-4e8f-9a0b-1c2d3e4f5a6b")
    add("doppler_token", "DOPPLER_TOKEN={s}", "dp.pt." + alnum(43))
    add("doppler_token", "service token {s}", "dp.st.prd." + alnum(44))
    add("vault_token", "VAULT_TOKEN={s}", "hvs." + urlsafe(90))
    add("vault_token", "batch token {s}", "hvb." + urlsafe(120))
    add("databricks_token", "DATABRICKS_TOKEN={s}", "dapi" + rand(HEX, 32))
    add("databricks_token", "pat {s}", "dapi" + rand(HEX, 32) + "-2")

    # --- git hosts and developer platforms ---
    add("github_token", "git clone https://{s}@github.com/o/r.git", "ghp_" + alnum(36))
    add("github_token", "GH_TOKEN={s}", "gho_" + alnum(36))
    add("github_token", "installation token {s}", "ghs_" + alnum(36))
    add("github_fine_grained_pat", "token: {s}", "github_pat_" + alnum(22) + "_" + alnum(59))
    add("github_fine_grained_pat", "我的GitHub令牌{s}", "github_pat_" + alnum(22) + "_" + alnum(59))
    add("gitlab_token", "GITLAB_TOKEN={s}", "glpat-" + urlsafe(20))
    add("gitlab_token", "trigger {s}", "glptt-" + rand(HEX, 40))
    add("atlassian_token", "jira token {s}", "ATATT3xFfGF0" + urlsafe(170) + "=" + rand(HEX, 8).upper())
    add("atlassian_token", "CONFLUENCE_TOKEN={s}", "ATATT3xFfGF0" + urlsafe(160) + "=" + rand(HEX, 8).upper())
    add("bitbucket_token", "app password {s}", "ATBB" + alnum(32))
    add("bitbucket_token", "BITBUCKET={s}", "ATBB" + alnum(36))
    add("npm_token", "//registry.npmjs.org/:_authToken={s}", "npm_" + alnum(36))
    add("npm_token", "NPM_TOKEN={s}", "npm_" + alnum(36))
    add("pypi_token", "password = {s}", "pypi-AgEIcHlwaS5vcmc" + urlsafe(120))
    add("pypi_token", "TWINE_PASSWORD={s}", "pypi-AgENdGVzdC5weXBpLm9yZw" + urlsafe(100))
    add("linear_key", "LINEAR_API_KEY={s}", "lin_api_" + alnum(40))
    add("linear_key", "linear {s}", "lin_api_" + alnum(40))
    add("notion_token", "NOTION_TOKEN={s}", "secret_" + alnum(43))
    add("notion_token", "integration {s}", "ntn_" + alnum(46))
    sentry_claims = b64url(json.dumps({"iat": 1700000000, "url": "https://sentry.io", "org": "demo"}).encode())
    add("sentry_token", "SENTRY_AUTH_TOKEN={s}", "sntrys_" + sentry_claims + "_" + urlsafe(43))
    add("sentry_token", "user token {s}", "sntryu_" + rand(HEX, 64))
    add("grafana_token", "GRAFANA_TOKEN={s}", "glsa_" + alnum(32) + "_" + rand(HEX, 8))
    add("grafana_token", "cloud {s}", "glc_" + b64url(json.dumps({"o": "1", "n": "stack", "k": alnum(24)}).encode()))
    add("new_relic_key", "NEW_RELIC_API_KEY={s}", "NRAK-" + rand(UPPER + DIGITS, 27))
    add("new_relic_key", "key {s}", "NRAK-" + rand(UPPER + DIGITS, 27))
    add("postman_key", "POSTMAN_API_KEY={s}", "PMAK-" + rand(HEX, 24) + "-" + rand(HEX, 34))
    add("postman_key", "postman {s}", "PMAK-" + rand(HEX, 24) + "-" + rand(HEX, 34))
    add("age_secret_key", "# created: 2024\n{s}", "AGE-SECRET-KEY-1" + rand(BECH32, 58))
    add("age_secret_key", "age key {s}", "AGE-SECRET-KEY-1" + rand(BECH32, 58))

    # --- messaging and payments ---
    add("slack_token", "SLACK_BOT_TOKEN={s}", f"xoxb-{rand(DIGITS, 12)}-{rand(DIGITS, 13)}-{alnum(24)}")
    user_token = f"xoxp-{rand(DIGITS, 12)}-{rand(DIGITS, 12)}-{rand(DIGITS, 13)}-{rand(HEX, 32)}"
    add("slack_token", "user token {s}", user_token)
    for template in ("SLACK_APP_TOKEN={s}", "socket mode {s}"):
        add("slack_app_token", template, f"xapp-1-A{rand(UPPER + DIGITS, 10)}-{rand(DIGITS, 13)}-{rand(HEX, 64)}")
    for template, n in (("post to {s}", 8), ("webhook: {s}", 10)):
        team, bot = rand(UPPER + DIGITS, n), rand(UPPER + DIGITS, n)
        add("slack_webhook", template, f"https://hooks.slack.com/services/T{team}/B{bot}/{alnum(24)}")
    add("discord_webhook", "{s}", f"https://discord.com/api/webhooks/{rand(DIGITS, 18)}/{urlsafe(68)}")
    add("discord_webhook", "hook {s}", f"https://discordapp.com/api/webhooks/{rand(DIGITS, 19)}/{urlsafe(68)}")
    add("discord_bot_token", "DISCORD_TOKEN={s}", discord_bot_token())
    add("discord_bot_token", "bot.run('{s}')", discord_bot_token())
    add("telegram_bot_token", "TELEGRAM_BOT_TOKEN={s}", f"{_rng.randint(10**8, 10**10 - 1)}:AA{urlsafe(33)}")
    add("telegram_bot_token", "机器人令牌{s}", f"{_rng.randint(10**8, 10**10 - 1)}:AA{urlsafe(33)}")
    add("stripe_secret_key", "STRIPE_SECRET_KEY={s}", "sk_live_" + alnum(99))
    add("stripe_secret_key", "stripe.api_key = '{s}'", "sk_test_" + alnum(24))
    add("stripe_restricted_key", "restricted {s}", "rk_live_" + alnum(99))
    add("stripe_restricted_key", "rk={s}", "rk_test_" + alnum(24))
    add("stripe_webhook_secret", "STRIPE_WEBHOOK_SECRET={s}", "whsec_" + alnum(32))
    add("stripe_webhook_secret", "endpoint secret {s}", "whsec_" + alnum(40))
    add("twilio_api_key", "TWILIO_API_KEY={s}", "SK" + rand(HEX, 32))
    add("twilio_api_key", "api key sid {s}", "SK" + rand(HEX, 32))
    add("twilio_account_sid", "TWILIO_ACCOUNT_SID={s}", "AC" + rand(HEX, 32))
    add("twilio_account_sid", "account {s} and auth token in the vault", "AC" + rand(HEX, 32))
    add("twilio_auth_token", "TWILIO_AUTH_TOKEN={s}", rand(HEX, 32))
    add("twilio_auth_token", 'auth_token: "{s}"', rand(HEX, 32))
    add("sendgrid_key", "SENDGRID_API_KEY={s}", f"SG.{urlsafe(22)}.{urlsafe(43)}")
    add("sendgrid_key", "sendgrid {s}", f"SG.{urlsafe(22)}.{urlsafe(43)}")
    add("mailgun_key", "MAILGUN_API_KEY={s}", "key-" + rand(HEX, 32))
    add("mailgun_key", "api:{s}", "key-" + rand(HEX, 32))
    add("mailchimp_key", "MAILCHIMP_KEY={s}", rand(HEX, 32) + "-us21")
    add("mailchimp_key", "mc {s}", rand(HEX, 32) + "-us6")
    add("shopify_token", "X-Shopify-Access-Token: {s}", "shpat_" + rand(HEX, 32))
    add("shopify_token", "shared secret {s}", "shpss_" + rand(HEX, 32))

    # --- structured secrets ---
    # For key blocks the "secret" checked is one base64 line from the middle of the body.
    for label in ("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "PGP PRIVATE KEY BLOCK", "EC PRIVATE KEY", "PRIVATE KEY"):
        block, line = pem(label)
        c.append(Case("private_key", f"here is the key:\n{block}\nthanks", line))
    block, line = pem("PRIVATE KEY")
    escaped = block.replace("\n", "\\n")  # as it sits inside a service-account JSON file
    c.append(Case("private_key", '{"type": "service_account", "private_key": "' + escaped + '\\n"}', line))
    body = pem_body(5)
    c.append(Case("private_key", "cut short: -----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body), body[3]))
    add("jwt", "token {s}", jwt({"sub": "1234567890", "name": "Jane Doe", "iat": 1516239022}))
    add("jwt", "cookie=session={s}; Path=/", jwt({"user_id": 42, "role": "admin"}))
    add("database_url", "DATABASE_URL=postgres://app:{s}@db.internal:5432/prod", "Pa55word!x")
    add("database_url", "redis://:{s}@cache.local:6379/0", "s3cretRedisPw")
    add("database_url", "broker amqp://guest:{s}@mq.local:5672/vhost ok", "rabbitPw99")
    add("database_url", "mongodb+srv://admin:{s}@cluster0.abcde.mongodb.net/test", "M0ngoPass")
    add("database_url", "engine = create_engine('postgresql+asyncpg://u:{s}@localhost/db')", "hunter2hunter2")
    add("url_credentials", "git remote add origin https://deploy:{s}@git.example.com/repo.git", "tok3nValue99")
    add("url_credentials", "ftp://user:{s}@files.example.org/pub", "ftpPass77")
    add("bearer_token", "Authorization: Bearer {s}", urlsafe(40))
    add("bearer_token", "curl -H 'authorization: bearer {s}' https://api.example.com", alnum(32))
    add("basic_auth", "Authorization: Basic {s}", base64.b64encode(b"admin:Sup3rSecret").decode())
    add("basic_auth", "-H 'Authorization: basic {s}'", base64.b64encode(b"svc:" + alnum(16).encode()).decode())

    # --- generic assignments ---
    add("password", "password={s}", "Hunter2Hunter2")
    add("password", 'DB_PASSWORD="{s}"', "correct horse battery")
    add("password", "my password is {s} don't tell", "Summer2023!")
    add("password", "密码：{s}，别告诉别人", "Abc12345")
    add("password", '{{"username": "bob", "password": "{s}"}}', "p@ssW0rd")
    add("password", "wifi passcode = {s}", "84736251")
    add("password", 'PASSWORD="{s}"', "it's-a-S3cret")
    add("password", "passwd: {s}", "letmein")
    add("password", "SMTP_PASSWORD: {s}", "mailerpass")
    add("generic_secret", 'api_key: "{s}"', alnum(32))
    add("generic_secret", "SECRET_KEY={s}", urlsafe(50))
    add("generic_secret", "client_secret={s}&grant_type=client_credentials", alnum(40))
    add("generic_secret", "我的密钥是{s}谢谢", "Ab12Cd34Ef56")
    add("generic_secret", "x-api-key: {s}", rand(HEX, 40))

    # --- personal data ---
    visa = luhn_complete("4", 16)
    add("credit_card", "card {s} exp 12/27", group(visa, [4, 4, 4, 4], " "))
    mc = luhn_complete("2221", 16)
    add("credit_card", "mc {s}", group(mc, [4, 4, 4, 4], "-"))
    amex = luhn_complete("37", 15)
    add("credit_card", "amex {s}", group(amex, [4, 6, 5], " "))
    add("credit_card", "discover:{s}", luhn_complete("6011", 16))
    add("credit_card", "银联卡号{s}", luhn_complete("62", 19))
    add("credit_card", "jcb {s}.", luhn_complete("3530", 16))
    add("us_ssn", "my SSN is {s}", ssn())
    add("us_ssn", "ssn:{s}", ssn())
    add("us_ssn", "Social Security Number: {s}", ssn().replace("-", ""))
    de = iban("DE", rand(DIGITS, 18))
    add("iban", "IBAN {s}", iban_print(de))
    gb = iban("GB", "WEST" + rand(DIGITS, 14))
    add("iban", "pay to {s} then confirm", iban_print(gb))
    be = iban("BE", rand(DIGITS, 12))  # 16 chars: four full groups, so "THEN" looks like a fifth
    add("iban", "send to {s} THEN call", iban_print(be))
    add("iban", "FR: {s}", iban("FR", rand(DIGITS, 10) + rand(UPPER + DIGITS, 11) + rand(DIGITS, 2)))
    add("iban", "konto {s}", iban("NO", rand(DIGITS, 11)))
    add("email", "write to {s}.", "alice.smith+tag@example.co.uk")
    add("email", "张伟的邮箱是{s}谢谢", "zhang.wei@example.cn")
    add("email", "<{s}>", "ops-team@mail.example.org")
    add("cn_resident_id", "身份证号{s}。", cn_id("110105", "19900307"))
    add("cn_resident_id", "ID {s}", cn_id("440304", "20010228", want_x=True))
    add("cn_resident_id", "id: {s}", cn_id("310115", "19751231", want_x=True).lower())
    add("cn_mobile", "我的手机号是{s}。", "1" + _rng.choice("3456789") + rand(DIGITS, 9))
    add("cn_mobile", "call {s}", "+86 139 " + rand(DIGITS, 4) + " " + rand(DIGITS, 4))
    add("cn_mobile", "tel:{s}", "+86" + "158" + rand(DIGITS, 8))
    add("phone_number", "call me at {s} tomorrow", "+1 (415) 555-0132")
    add("phone_number", "office {s}", "+44 20 7946 0958")
    add("phone_number", "Phone: {s}", "(212) 555-0147")
    add("phone_number", "text {s} after 5", "415-555-0199")
    add("phone_number", "ring {s}", "020 7946 0123")
    add("phone_number", "mobile {s}", "07700 900123")
    add("phone_number", "WhatsApp {s}", "+49 30 901820")
    return c


CASES = _cases()


def _overlaps(finding: Finding, text: str, secret: str) -> bool:
    at = text.index(secret)
    return finding.start < at + len(secret) and at < finding.end


def test_table_covers_every_kind_twice() -> None:
    assert len(KINDS) >= 45
    counts = {kind: sum(1 for case in CASES if case.kind == kind) for kind in KINDS}
    assert {kind for kind, n in counts.items() if n < 2} == set()
    assert {case.kind for case in CASES} <= KINDS
    assert len(CASES) >= 90


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_redact_removes_secret(case: Case) -> None:
    assert case.secret in case.text
    result = apply_policy(case.text, "redact")
    assert isinstance(result, DefenseResult)
    assert case.secret not in result.text
    assert f"[REDACTED:{case.kind}]" in result.text
    covering = [f for f in result.findings if _overlaps(f, case.text, case.secret)]
    assert [f.kind for f in covering] == [case.kind]
    assert result.blocked is False
    assert redact(case.text) == result.text


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_block_and_off(case: Case) -> None:
    blocked = apply_policy(case.text, "block")
    assert blocked.blocked is True
    assert blocked.text == case.text
    assert blocked.findings
    off = apply_policy(case.text, "off")
    assert off == DefenseResult(text=case.text, findings=[], blocked=False)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_redaction_is_idempotent(case: Case) -> None:
    once = redact(case.text)
    assert scan(once) == []
    assert redact(once) == once


def test_findings_are_sorted_disjoint_and_carry_no_secret() -> None:
    assert set(Finding.model_fields) == {"kind", "start", "end"}
    text = "\n".join(case.text for case in CASES)
    findings = scan(text)
    assert findings == sorted(findings, key=lambda f: f.start)
    for before, after in pairwise(findings):
        assert before.end <= after.start
    redacted = redact(text)
    for case in CASES:
        assert case.secret not in redacted, case.id


def test_exact_offsets_point_at_the_secret() -> None:
    key = "ghp_" + alnum(36)
    text = f"我的令牌{key}谢谢"
    (finding,) = scan(text)
    assert text[finding.start : finding.end] == key
    assert finding.kind == "github_token"


# --- precedence: the most specific kind wins, never two overlapping findings ---


def test_anthropic_beats_generic_sk_and_assignment() -> None:
    key = "sk-ant-api03-" + urlsafe(93) + "AA"
    assert [f.kind for f in scan(f'api_key="{key}"')] == ["anthropic_key"]


def test_jwt_inside_bearer_is_reported_as_jwt() -> None:
    token = jwt({"sub": "x"})
    assert [f.kind for f in scan(f"Authorization: Bearer {token}")] == ["jwt"]


def test_database_url_not_split_into_email() -> None:
    text = "postgres://app:pw12345@db.example.com:5432/app"
    assert [f.kind for f in scan(text)] == ["database_url"]
    assert redact(text) == "[REDACTED:database_url]"


def test_key_in_longer_alphanumeric_run_is_not_a_match() -> None:
    assert scan("xghp_" + alnum(36)) == []
    assert scan("AKIA" + rand(UPPER + DIGITS, 17)) == []  # 21 chars: not an access key id
    assert scan("monkey-" + rand(HEX, 32)) == []  # not a Mailgun key-...


def test_log_line_with_several_secrets() -> None:
    key, card = "sk-proj-" + urlsafe(60), luhn_complete("4", 16)
    line = f"INFO retain bank=alice content='my key {key}, card {card}, mail bob@example.com'"
    out = redact(line)
    assert key not in out and card not in out and "bob@example.com" not in out
    assert out == (
        "INFO retain bank=alice content='my key [REDACTED:openai_key], card [REDACTED:credit_card], "
        "mail [REDACTED:email]'"
    )


def test_many_findings_scale_linearly() -> None:
    def emails(count: int) -> str:
        return " ".join(f"user{i}@example.com" for i in range(count))

    findings = scan(emails(5000))
    assert len(findings) == 5000 and {f.kind for f in findings} == {"email"}
    assert growth(lambda count: scan(emails(count)), 1000) < LINEAR_BOUND  # no rescanning per finding


def test_unknown_policy_is_rejected() -> None:
    with pytest.raises(ValueError):
        apply_policy("x", "drop")  # type: ignore[arg-type]  # an unknown policy, on purpose


def test_empty_text() -> None:
    assert scan("") == []
    assert apply_policy("", "block") == DefenseResult(text="", findings=[], blocked=False)


# --------------------------------------------------------------------------------------------------
# Negatives: ordinary talk must pass untouched
# --------------------------------------------------------------------------------------------------

NEGATIVES = [
    "Hey Mel! Good to see you! How have you been?",
    "We met on 2023-05-08 at the cafe, then again on 2023/06/12 and 08.05.2023.",
    "1:56 pm on 8 May, 2023",
    "The meeting runs 10:30-11:45 tomorrow.",
    "It costs $1,299.99 plus tax, or €1.299,99 in Berlin, or ¥12,000.",
    "Back in 1998 and again in 2004 we went camping; in 2019-2020 too.",
    "Upgrade to Python 3.11.7, pydantic 2.14.4 or numpy==1.26.4 (v10.2.1-rc.3).",
    "The request id was 550e8400-e29b-41d4-a716-446655440000.",
    "I pushed commit 9fceb02d0ae598e95dc970b74767f19372d61af8 to main, short hash a1b2c3d.",
    "Reference number 4111111111111112 is on the receipt.",
    "The password is on the fridge.",
    "password: what was it again?",
    "My password is wrong, I think. The password was changed yesterday.",
    "The secret is out! Token: expired. api key is required.",
    'password=os.environ["DB_PASSWORD"] and api_key = "${API_KEY}" and token=<your-token>',
    "max_tokens=4096, temperature=0.7, top_p=0.9",
    "I scored 95/100 on the test, 3 times in a row.",
    "Call 911! Room 1234, extension 5678.",
    "ISBN 978-3-16-148410-0 and IP 192.168.1.254.",
    "Unix time 1683561600 or 1683561600123 in ms.",
    "我们2023年5月8日见面，花了1299元，订单号20230508。",
    "ASIA is a big continent. I love sk-8ing. SKIP it. ACDC rocks.",
    "Invalid SSNs like 000-12-3456, 666-12-3456 and 912-34-5678 are never issued.",
    "Mail me at user@localhost or pkg@1.2.3 or @alice on twitter.",
    "Short sk-12345 and hf_hub_download and ghp_short.",
    "Score +12.5 today, +5 points, up +3%.",
    "Chapter 7.3.1, section 12-4, page 1024.",
    "We had 2,500 guests and 15,000,000 views.",
    "The bearer of bad news arrived.",
    "Use the private key stored in your keychain.",
    "I ran 5k in 25:13 and 10k in 52:40.",
    # 40-character runs that are not random keys: identifiers, paths, hex digests.
    "See AbstractSingletonProxyFactoryBean1234567 and HTTPServerRequestHandlerForV2APIAccess01.",
    "Open com/example/project/Main4Application/Ok or iPhone13ProMaxUserGuideDownloadPDF2023v2.",
]


def _bad_cn_ids() -> list[str]:
    good = cn_id("110105", "19900307")
    wrong_check = good[:17] + ("0" if good[17] != "0" else "1")
    bad_date = "110105" + "19900230" + "123"
    bad_date += "10X98765432"[sum(int(d) * w for d, w in zip(bad_date, CN_WEIGHTS, strict=True)) % 11]
    return [f"号码{wrong_check}", f"号码{bad_date}"]


@pytest.mark.parametrize("text", NEGATIVES + _bad_cn_ids())
def test_ordinary_text_has_no_findings(text: str) -> None:
    assert scan(text) == []
    assert apply_policy(text, "redact").text == text
    assert apply_policy(text, "block").blocked is False


def test_bad_iban_checksum_is_ignored() -> None:
    good = iban("DE", "370400440532013000")
    assert [f.kind for f in scan(good)] == ["iban"]
    digits = "0123456789"
    bad = good[:-1] + digits[(digits.index(good[-1]) + 1) % 10]
    assert scan(bad) == []


# --------------------------------------------------------------------------------------------------
# False-positive rate on real conversation (LoCoMo dev), read in place
# --------------------------------------------------------------------------------------------------


def _locomo_turns() -> list[str]:
    conversations = json.loads(LOCOMO_DEV.read_text(encoding="utf-8"))
    turns: list[str] = []
    for conversation in conversations:
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns.extend(turn.get("text", "") for turn in session)
    return turns


@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason=f"LoCoMo dev data not found at {LOCOMO_DEV}")
def test_locomo_false_positive_rate(capsys: pytest.CaptureFixture[str]) -> None:
    turns = _locomo_turns()
    assert turns
    flagged = [(text, scan(text)) for text in turns]
    flagged = [(text, findings) for text, findings in flagged if findings]
    with capsys.disabled():
        print(f"\nLoCoMo defense false positives: {len(flagged)}/{len(turns)} turns")
        for text, findings in flagged[:10]:
            print("  ", [f.kind for f in findings], text[:100])
    assert len(flagged) < 0.01 * len(turns)


@pytest.mark.parametrize(
    "text",
    ["邮箱 user＠qgdim。com 谢谢", "mail: user@qgdim｡com", "user＠mail。example。org"],
)
def test_an_email_with_ideographic_full_stops_is_redacted(text: str) -> None:
    # A Chinese input method types "。" where the domain wants "." (NFKC keeps it): read as '.'.
    assert [f.kind for f in scan(text)] == ["email"]
    assert "qgdim" not in redact(text) and "example" not in redact(text)


def test_a_sentence_ending_in_an_ideographic_full_stop_is_not_an_email() -> None:
    assert scan("我住在北京。明天见。版本 2。3 发布了。") == []
