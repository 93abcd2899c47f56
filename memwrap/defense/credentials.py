"""Memory defense, credential rules: API keys, tokens, private keys, credentials in URLs and assignments.

Grouped by family: LLM vendors, cloud, developer platforms, messaging and payments, structured
secrets (key blocks, JWTs, URLs), and generic `password=` / `api_key: ...` assignments.
"""

from __future__ import annotations

import re

from memwrap.defense.checks import (
    _discord_token_ok,
    _mixed,
    _random_base64_40,
    _refine_api_secret,
    _refine_password,
    _twilio_context,
)
from memwrap.defense.rule import (
    _ASSIGN,
    _B,
    _E,
    _E_B64,
    _E_URLSAFE,
    _QUOTED_OR_BARE,
    _R_ASSIGN,
    _R_BLOCK,
    _R_GENERIC,
    _R_LABELLED,
    _R_STRUCT,
    _R_VENDOR,
    _accept_if,
    _Rule,
    _rx,
)

# --------------------------------------------------------------------------------------------------
# The rules, grouped by family
# --------------------------------------------------------------------------------------------------

_URLSAFE = r"[A-Za-z0-9_-]"
_B64 = r"[A-Za-z0-9+/]"

_LLM_VENDOR_RULES: tuple[_Rule, ...] = (
    # Anthropic before the generic sk-: "sk-ant-api03-..." / "sk-ant-admin01-...".
    _Rule(
        "anthropic_key",
        _rx(_B + r"sk-ant-[a-z]{2,8}\d{0,3}-" + _URLSAFE + r"{32,}"),
        _R_VENDOR + 5,
        needles=("sk-ant-",),
    ),
    # OpenAI: project, service-account, admin and user keys; legacy keys embed "T3BlbkFJ"
    # (base64 of "OpenAI") in the middle.
    _Rule(
        "openai_key",
        _rx(_B + r"sk-(?:proj|svcacct|admin|None)-" + _URLSAFE + r"{20,}"),
        _R_VENDOR + 5,
        needles=("sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-"),
    ),
    _Rule(
        "openai_key",
        _rx(_B + r"sk-[A-Za-z0-9]{16,}T3BlbkFJ[A-Za-z0-9]{16,}" + _E),
        _R_VENDOR + 5,
        needles=("T3BlbkFJ",),
    ),
    _Rule("openrouter_key", _rx(_B + r"sk-or-v1-[a-f0-9]{64}" + _E), _R_VENDOR + 5, needles=("sk-or-",)),
    # DeepSeek, Moonshot, DashScope, legacy OpenAI ... all use "sk-" plus a long alphanumeric run.
    _Rule(
        "generic_sk_key", _rx(_B + r"sk-[A-Za-z0-9]{32,}" + _E), _R_GENERIC, needles=("sk-",), refine=_accept_if(_mixed)
    ),
    _Rule("google_api_key", _rx(_B + r"AIza" + _URLSAFE + r"{35}" + _E_URLSAFE), _R_VENDOR, needles=("AIza",)),
    _Rule("groq_key", _rx(_B + r"gsk_[A-Za-z0-9]{48,}" + _E), _R_VENDOR, needles=("gsk_",)),
    _Rule(
        "huggingface_token",
        _rx(_B + r"hf_[A-Za-z0-9]{34,40}" + _E),
        _R_VENDOR,
        needles=("hf_",),
        refine=_accept_if(_mixed),
    ),
    _Rule(
        "replicate_token", _rx(_B + r"r8_[A-Za-z0-9]{37}" + _E), _R_VENDOR, needles=("r8_",), refine=_accept_if(_mixed)
    ),
    _Rule("perplexity_key", _rx(_B + r"pplx-[A-Za-z0-9]{40,}" + _E), _R_VENDOR, needles=("pplx-",)),
    _Rule("xai_key", _rx(_B + r"xai-[A-Za-z0-9]{48,}" + _E), _R_VENDOR, needles=("xai-",), refine=_accept_if(_mixed)),
    _Rule("langsmith_key", _rx(_B + r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + _E), _R_VENDOR, needles=("lsv2_",)),
    # Cohere keys have no prefix: only trust them under a Cohere label.
    _Rule(
        "cohere_key",
        _rx(
            r"cohere[_ .-]?(?:api[_ .-]?)?(?:key|token)" + _ASSIGN + r"""["']?(?P<secret>[A-Za-z0-9]{40})""" + _E,
            ignore_case=True,
        ),
        _R_LABELLED,
        needles=("cohere",),
        folded=True,
    ),
)

_CLOUD_RULES: tuple[_Rule, ...] = (
    # AWS key ids: long-term (AKIA), temporary (ASIA) and the rarer ABIA/ACCA/A3T prefixes.
    _Rule(
        "aws_access_key",
        _rx(_B + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}" + _E),
        _R_VENDOR,
        needles=("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
    ),
    # The 40-char secret key has no prefix and looks like any base64; only trust it when labelled.
    _Rule(
        "aws_secret_key",
        _rx(
            r"(?:aws[_ .-]?secret[_ .-]?(?:access[_ .-]?)?key|secret[_ ]?access[_ ]?key)"
            + _ASSIGN
            + r"""["']?(?P<secret>[A-Za-z0-9/+]{40})"""
            + _E_B64,
            ignore_case=True,
        ),
        _R_LABELLED,
        needles=("secret",),
        folded=True,
    ),
    # ... and unlabelled, alone on a line of an env dump or a chat message: only a random-looking run of
    # exactly 40 base64 characters (checks._random_base64_40), so identifiers and paths stay.
    _Rule(
        "aws_secret_key",
        _rx(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}" + _E_B64),
        _R_GENERIC - 5,
        min_len=40,
        min_digits=1,
        refine=_accept_if(_random_base64_40),
    ),
    _Rule(
        "aws_session_token",
        _rx(
            r"(?:aws[_ .-]?session[_ .-]?token|sessiontoken|security[_ .-]?token)"
            + _ASSIGN
            + r"""["']?(?P<secret>[A-Za-z0-9/+=]{100,})""",
            ignore_case=True,
        ),
        _R_LABELLED,
        needles=("token",),
        folded=True,
        min_len=100,
    ),
    # Service-account JSON: the key id is a 40-hex handle on the private key (which the
    # private_key block rule catches separately).
    _Rule(
        "gcp_private_key_id",
        _rx(r'"private_key_id"\s*:\s*"(?P<secret>[a-f0-9]{40})"'),
        _R_LABELLED,
        needles=("private_key_id",),
    ),
    _Rule(
        "google_oauth_secret", _rx(_B + r"GOCSPX-" + _URLSAFE + r"{28}" + _E_URLSAFE), _R_VENDOR, needles=("GOCSPX-",)
    ),
    _Rule("google_oauth_token", _rx(_B + r"ya29\." + _URLSAFE + r"{30,}"), _R_VENDOR, needles=("ya29.",)),
    # Azure storage / Service Bus connection strings: redact the key, keep the account name.
    _Rule(
        "azure_storage_key",
        _rx(r"AccountKey=(?P<secret>" + _B64 + r"{40,}={0,2})", ignore_case=True),
        _R_LABELLED,
        needles=("accountkey=",),
        folded=True,
    ),
    _Rule(
        "azure_shared_access_key",
        _rx(r"SharedAccessKey=(?P<secret>" + _B64 + r"{40,}={0,2})", ignore_case=True),
        _R_LABELLED,
        needles=("sharedaccesskey=",),
        folded=True,
    ),
    # SAS URLs: the signature is a URL-encoded base64 HMAC-SHA256 (43+ chars).
    _Rule(
        "azure_sas_signature",
        _rx(r"(?<=[?&;])sig=(?P<secret>[A-Za-z0-9%+/]{40,}(?:%3D|=){0,2})"),
        _R_LABELLED,
        needles=("sig=",),
    ),
    # Azure AD (Entra) client secrets carry "Q~" after a 3-char id and a version digit.
    _Rule(
        "azure_ad_client_secret",
        _rx(r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"),
        _R_VENDOR,
        needles=("Q~",),
    ),
    _Rule("digitalocean_token", _rx(_B + r"do[opr]_v1_[a-f0-9]{64}" + _E), _R_VENDOR, needles=("_v1_",)),
    _Rule("heroku_key", _rx(_B + r"HRKU-" + _URLSAFE + r"{40,}"), _R_VENDOR, needles=("HRKU-",)),
    _Rule(
        "heroku_key",
        _rx(
            r"heroku[_ .-]?api[_ .-]?key"
            + _ASSIGN
            + r"""["']?(?P<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"""
            + _E,
            ignore_case=True,
        ),
        _R_LABELLED,
        needles=("heroku",),
        folded=True,
    ),
    # Personal tokens "dp.pt.<43>", service tokens "dp.st.<config>.<44>", ...
    _Rule(
        "doppler_token",
        _rx(_B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_-]{2,35}\.)?[A-Za-z0-9]{40,44}" + _E),
        _R_VENDOR,
        needles=("dp.",),
    ),
    _Rule("vault_token", _rx(_B + r"hv[sbr]\." + _URLSAFE + r"{24,}"), _R_VENDOR, needles=("hvs.", "hvb.", "hvr.")),
    _Rule("databricks_token", _rx(_B + r"dapi[a-f0-9]{32}(?:-\d{1,2})?" + _E), _R_VENDOR, needles=("dapi",)),
)

_DEV_PLATFORM_RULES: tuple[_Rule, ...] = (
    # GitHub classic tokens: personal, OAuth, user-to-server, server-to-server, refresh.
    _Rule(
        "github_token",
        _rx(_B + r"gh[pousr]_[A-Za-z0-9]{36,255}" + _E),
        _R_VENDOR,
        needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _Rule(
        "github_fine_grained_pat",
        _rx(_B + r"github_pat_[A-Za-z0-9_]{50,255}" + _E),
        _R_VENDOR,
        needles=("github_pat_",),
    ),
    _Rule(
        "gitlab_token",
        _rx(_B + r"gl(?:pat|ptt|rt|dt|ft|soat|cbt|imt)-" + _URLSAFE + r"{20,}"),
        _R_VENDOR,
        needles=("glpat-", "glptt-", "glrt-", "gldt-", "glft-", "glsoat-", "glcbt-", "glimt-"),
    ),
    _Rule("atlassian_token", _rx(_B + r"ATATT3[A-Za-z0-9_=-]{150,}"), _R_VENDOR, needles=("ATATT3",)),
    _Rule("bitbucket_token", _rx(_B + r"ATBB[A-Za-z0-9]{32,}" + _E), _R_VENDOR, needles=("ATBB",)),
    _Rule("npm_token", _rx(_B + r"npm_[A-Za-z0-9]{36}" + _E), _R_VENDOR, needles=("npm_",), refine=_accept_if(_mixed)),
    # PyPI tokens are macaroons whose base64 starts "AgE" (version byte + location).
    _Rule("pypi_token", _rx(_B + r"pypi-AgE" + _URLSAFE + r"{50,}"), _R_VENDOR, needles=("pypi-",)),
    _Rule("linear_key", _rx(_B + r"lin_api_[A-Za-z0-9]{40}" + _E), _R_VENDOR, needles=("lin_api_",)),
    _Rule(
        "notion_token",
        _rx(_B + r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{46})" + _E),
        _R_VENDOR,
        needles=("secret_", "ntn_"),
        refine=_accept_if(_mixed),
    ),
    _Rule(
        "sentry_token",
        _rx(_B + r"(?:sntrys_eyJ[A-Za-z0-9+/=_-]{50,}|sntryu_[a-f0-9]{64}" + _E + r")"),
        _R_VENDOR,
        needles=("sntry",),
    ),
    _Rule(
        "grafana_token",
        _rx(_B + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_eyJ[A-Za-z0-9+/=_-]{32,})" + _E),
        _R_VENDOR,
        needles=("glsa_", "glc_"),
    ),
    _Rule("new_relic_key", _rx(_B + r"NRAK-[A-Z0-9]{27}" + _E), _R_VENDOR, needles=("NRAK-",)),
    _Rule("postman_key", _rx(_B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _E), _R_VENDOR, needles=("PMAK-",)),
    _Rule(
        "age_secret_key",
        _rx(_B + r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}" + _E),
        _R_VENDOR,
        needles=("AGE-SECRET-KEY-",),
    ),
)

_MESSAGING_PAYMENT_RULES: tuple[_Rule, ...] = (
    _Rule(
        "slack_token",
        _rx(_B + r"xox[abeoprs]-[0-9A-Za-z]+(?:-[0-9A-Za-z]+)+" + _E),
        _R_VENDOR,
        needles=("xox",),
        refine=_accept_if(lambda s: len(s) >= 24),
    ),
    _Rule("slack_app_token", _rx(_B + r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]{32,}" + _E), _R_VENDOR, needles=("xapp-",)),
    _Rule(
        "slack_webhook",
        _rx(r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}"),
        _R_VENDOR,
        needles=("hooks.slack.com",),
    ),
    _Rule(
        "discord_webhook",
        _rx(r"https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{17,20}/" + _URLSAFE + r"{60,}"),
        _R_VENDOR,
        needles=("/api/webhooks/",),
    ),
    # id (base64 of the numeric bot id) . timestamp . HMAC
    _Rule(
        "discord_bot_token",
        _rx(r"(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{22,26}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}" + _E_URLSAFE),
        _R_VENDOR,
        needles=(".",),
        min_len=59,
        refine=_accept_if(_discord_token_ok),
    ),
    _Rule(
        "telegram_bot_token",
        _rx(r"(?<![0-9A-Za-z])\d{8,10}:AA[A-Za-z0-9_-]{33}" + _E_URLSAFE),
        _R_VENDOR,
        needles=(":AA",),
        min_digits=8,
    ),
    _Rule(
        "stripe_secret_key",
        _rx(_B + r"sk_(?:live|test)_[A-Za-z0-9]{24,}" + _E),
        _R_VENDOR,
        needles=("sk_live_", "sk_test_"),
    ),
    _Rule(
        "stripe_restricted_key",
        _rx(_B + r"rk_(?:live|test)_[A-Za-z0-9]{24,}" + _E),
        _R_VENDOR,
        needles=("rk_live_", "rk_test_"),
    ),
    _Rule("stripe_webhook_secret", _rx(_B + r"whsec_[A-Za-z0-9+/]{32,}={0,2}"), _R_VENDOR, needles=("whsec_",)),
    _Rule("twilio_api_key", _rx(_B + r"SK[0-9a-f]{32}" + _E), _R_VENDOR, needles=("SK",)),
    _Rule("twilio_account_sid", _rx(_B + r"AC[0-9a-f]{32}" + _E), _R_VENDOR, needles=("AC",), refine=_twilio_context),
    _Rule(
        "twilio_auth_token",
        _rx(
            r"(?:twilio[_ .-]?)?auth[_ .-]?token" + _ASSIGN + r"""["']?(?P<secret>[0-9a-f]{32})""" + _E,
            ignore_case=True,
        ),
        _R_LABELLED,
        needles=("token",),
        folded=True,
    ),
    _Rule(
        "sendgrid_key",
        _rx(_B + r"SG\." + _URLSAFE + r"{22}\." + _URLSAFE + r"{43}" + _E_URLSAFE),
        _R_VENDOR,
        needles=("SG.",),
    ),
    _Rule("mailgun_key", _rx(_B + r"key-[0-9a-f]{32}" + _E), _R_VENDOR, needles=("key-",)),
    _Rule("mailchimp_key", _rx(_B + r"[0-9a-f]{32}-us\d{1,2}" + _E), _R_VENDOR, needles=("-us",)),
    _Rule("shopify_token", _rx(_B + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _E), _R_VENDOR, needles=("shp",)),
)

# Between PEM lines: real newlines, JSON-escaped "\n", or spaces when a paste lost its newlines.
_PEM_SEP = r"(?:[ \t]*(?:\r?\n|\\r?\\n)?[ \t]*)"

_STRUCTURED_RULES: tuple[_Rule, ...] = (
    # PEM / OpenSSH / PGP private keys, through the matching END line. An unterminated block (a
    # paste cut short) is still key material: take the base64 body that follows.
    _Rule(
        "private_key",
        _rx(
            r"-----BEGIN (?P<label>(?:[A-Z0-9]+ ){0,3})PRIVATE KEY(?P<block>(?: BLOCK)?)-----"
            r"(?:[\s\S]{0,40000}?-----END (?P=label)PRIVATE KEY(?P=block)-----"
            # unterminated: optional PEM headers, then base64 lines (the first one long, so a
            # header merely quoted in prose does not swallow the sentence after it)
            r"|(?:" + _PEM_SEP + r"(?:Proc-Type|DEK-Info|Comment|Version):[^\r\n\\]*)*"
            r"(?:" + _PEM_SEP + r"[A-Za-z0-9+/]{40,}={0,2})(?:" + _PEM_SEP + r"[A-Za-z0-9+/]{16,}={0,2})*"
            r"(?:(?:\r?\n|\\r?\\n)[A-Za-z0-9+/]{1,15}={0,2})?)"
        ),
        _R_BLOCK,
        needles=("PRIVATE KEY",),
    ),
    # Header.payload.signature, both JSON parts starting '{"' (base64 "eyJ").
    _Rule(
        "jwt",
        _rx(
            r"(?<![A-Za-z0-9_-])eyJ"
            + _URLSAFE
            + r"{8,}\.eyJ"
            + _URLSAFE
            + r"{8,}\.(?:"
            + _URLSAFE
            + r"+)?"
            + _E_URLSAFE
        ),
        _R_STRUCT,
        needles=("eyJ",),
    ),
    # Database / queue URLs with a password: redact the whole URL, host names are sensitive too.
    _Rule(
        "database_url",
        _rx(
            _B + r"(?:jdbc:)?(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver"
            r"|oracle|cockroachdb|clickhouse|neo4j(?:\+s)?|bolt|couchdb|nats|kafka)(?:\+[a-z0-9]+)?"
            r"://[^\s:/@]*:[^\s/?#]+@[^\s/?#@\"'<>]+(?:[/?#][^\s\"'<>]*)?",
            ignore_case=True,
        ),
        _R_STRUCT + 5,
        needles=("://",),
    ),
    # Any other URL with user:password@ (https, ftp, ssh ...): redact the credentials part.
    _Rule(
        "url_credentials",
        _rx(r"(?<=://)(?P<secret>[^\s:/@]*:[^\s/?#]+)@[^\s/?#@\"'<>]+", ignore_case=True),
        # "https://[REDACTED:github_token]@host" must not turn into a new finding on re-scan
        _R_STRUCT,
        needles=("://",),
        refine=_accept_if(lambda creds: "[REDACTED:" not in creds),
    ),
    _Rule(
        "bearer_token",
        _rx(r"(?<![A-Za-z0-9])bearer\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)", ignore_case=True),
        _R_GENERIC,
        needles=("bearer",),
        folded=True,
        refine=_accept_if(_mixed),
    ),
    _Rule(
        "basic_auth",
        _rx(r"authorization" + _ASSIGN + r"""["']?basic\s+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})""", ignore_case=True),
        _R_GENERIC,
        needles=("basic",),
        folded=True,
    ),
)

# Generic assignments. Password labels in English and Chinese (密码 "password", 口令 "passphrase").
_PASSWORD_LABEL = r"(?<![A-Za-z0-9])(?:pass(?:word|wd|phrase|code)?|pwd)"
_SECRET_LABEL = (
    r"(?<![A-Za-z0-9])(?:api[_-]?(?:key|secret|token)|apikey|access[_-]?(?:token|key)|auth[_-]?token"
    r"|refresh[_-]?token|client[_-]?secret|secret[_-]?key|private[_-]?key|app[_-]?secret|token|secret)"
)
_CJK_VALUE = r"""["'“]?(?P<secret>[A-Za-z0-9!#$%&*+\-./:<=>?@^_~]{6,128})"""

# Password labels in the major languages other than English and Chinese, as the normalised view writes them
# (view.py drops the accents of Latin letters: contraseña reads "contrasena", lösenord "losenord", şifre
# "sifre"; ł, Greek and other scripts keep theirs). Lower case: the rule folds case (Unicode, so Пароль too).
_PASSWORD_WORDS = (
    "passwort", "kennwort", "mot de passe", "contrasena", "senha", "palavra-passe", "palavra passe",
    "wachtwoord", "losenord", "passord", "adgangskode", "kodeord", "salasana", "haslo", "hasło", "heslo",
    "jelszo", "sifre", "parola", "parool", "lozinka", "geslo", "slaptazodis", "parole", "пароль", "пароля",
    "κωδικός", "κωδικος", "συνθηματικό", "סיסמה", "סיסמא", "كلمة المرور", "كلمة السر", "رمز عبور", "パスワード",
    "暗証番号", "密碼", "비밀번호", "암호", "पासवर्ड", "mat khau", "kata sandi", "kata laluan", "รหัสผ่าน",
)  # fmt: skip
_PASSWORD_WORDS_RX = re.compile(
    r"(?<![A-Za-z0-9])(?:" + "|".join(re.escape(w) for w in _PASSWORD_WORDS) + r")"
    # "Passwort: …", "mot de passe = …", "Passwort ist …", "la contraseña es …", "パスワードは…"
    r"(?:\s*[:：=]\s*|\s+(?:ist|est|es|e|er|ar|is|jest|je|ja|on|c'est)\s*:?\s*|\s*(?:は|が|是|为)\s*)"
    r"""["'“„«]?(?P<secret>[^\s"'”“„«»,;<>()\[\]{}。，、]{4,128})""",
    re.IGNORECASE,
)

_ASSIGNMENT_RULES: tuple[_Rule, ...] = (
    _Rule(
        "password",
        _rx(_PASSWORD_LABEL + _ASSIGN + _QUOTED_OR_BARE, ignore_case=True),
        _R_ASSIGN,
        needles=("pass", "pwd"),
        folded=True,
        refine=_refine_password,
    ),
    # "my password is hunter22": prose, so the value must look machine-ish (see validator).
    _Rule(
        "password",
        _rx(
            r"(?<![A-Za-z0-9])(?:password|passcode|passphrase)\s+(?:is|was|=)\s*:?\s*[\"']?"
            r"(?P<secret>[A-Za-z0-9!#$%&*+\-./:<=>?@^_~]{6,128})",
            ignore_case=True,
        ),
        _R_ASSIGN,
        needles=("pass",),
        folded=True,
        refine=_refine_password,
    ),
    _Rule(
        "password",
        _rx(r"(?:密码|口令)\s*(?:[:：=]|是|为)\s*" + _CJK_VALUE),
        _R_ASSIGN,
        needles=("密码", "口令"),
        refine=_refine_password,
    ),
    _Rule(
        "password",
        _PASSWORD_WORDS_RX,
        _R_ASSIGN,
        needles=tuple(sorted({w.lower() for w in _PASSWORD_WORDS})),
        folded=True,
        refine=_refine_password,
    ),
    _Rule(
        "generic_secret",
        _rx(_SECRET_LABEL + _ASSIGN + _QUOTED_OR_BARE, ignore_case=True),
        _R_ASSIGN,
        needles=("key", "token", "secret"),
        folded=True,
        refine=_refine_api_secret,
    ),
    _Rule(
        "generic_secret",
        _rx(r"(?:密钥|秘钥|令牌)\s*(?:[:：=]|是|为)\s*" + _CJK_VALUE),
        _R_ASSIGN,
        needles=("密钥", "秘钥", "令牌"),
        refine=_refine_api_secret,
    ),
)
