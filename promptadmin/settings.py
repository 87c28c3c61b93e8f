"""Settings for promptadmin, read from environment variables.

Every variable is parsed by a small typed helper that names the variable when its value
is wrong, so a bad deployment fails at start with a message instead of misbehaving later.
The defaults are the embedded development setup: SQLite next to the code, local-memory
cache, Celery tasks run in-process.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from redis.backoff import NoBackoff
from redis.retry import Retry

BASE_DIR = Path(__file__).resolve().parent.parent

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}={raw!r} is not a boolean: use one of 1/0, true/false, yes/no, on/off."
    )


def _env_number(name: str, default: float, parse: Callable[[str], float], kind: str) -> float:
    """``NAME`` read by ``parse`` (unset or blank: ``default``), as ``kind`` says it."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = parse(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not {kind}.") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"{name}={raw!r} must be a finite number.")
    return value


def _in_range(name: str, value: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} must be at most {maximum}.")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value = int(_env_number(name, default, int, "an integer"))
    _in_range(name, value, minimum, None)
    return value


def env_float(
    name: str, default: float, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    value = _env_number(name, default, float, "a number")
    _in_range(name, value, minimum, maximum)
    return value


def env_secret(name: str) -> str:
    """A secret from ``NAME`` or from the file named by ``NAME_FILE`` (container secrets)."""
    path = os.environ.get(f"{name}_FILE", "").strip()
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as error:
            raise ImproperlyConfigured(f"{name}_FILE={path!r} cannot be read: {error}") from None
    return os.environ.get(name, "").strip()


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_url(name: str, *, schemes: tuple[str, ...]) -> str:
    raw = os.environ.get(name, "").strip()
    if raw and urlsplit(raw).scheme not in schemes:
        allowed = ", ".join(f"{scheme}://" for scheme in schemes)
        raise ImproperlyConfigured(f"{name}={raw!r} must be a URL starting with one of: {allowed}")
    return raw


def weak_secret(key: str) -> bool:
    """What ``check --deploy`` calls weak (security.W009): short, repetitive or Django's
    placeholder."""
    return len(key) < 50 or len(set(key)) < 5 or key.startswith("django-insecure-")


DEBUG = env_bool("DEBUG", True)

SECRET_KEY = env_secret("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is required when DEBUG is off: set it to a long random string "
            "(for example: python -c 'import secrets; print(secrets.token_urlsafe(50))')."
        )
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"
elif not DEBUG and weak_secret(SECRET_KEY):
    raise ImproperlyConfigured(
        "SECRET_KEY is too weak for DEBUG off: use at least 50 characters, 5 of them "
        "different, not starting with 'django-insecure-' "
        "(for example: python -c 'import secrets; print(secrets.token_urlsafe(50))')."
    )

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "simple_history",
    "rest_framework",
    "rest_framework_api_key",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "drf_standardized_errors",
    "axes",
    "csp",
    "promptadmin.core",
    "promptadmin.content",
    "promptadmin.prompts",
    "promptadmin.conversations",
    "promptadmin.releases",
    "promptadmin.lore",
    "promptadmin.playtests",
]

MIDDLEWARE = [
    # Outermost: the request id (X-Request-ID, in every log line) and the metrics of every
    # answer, whichever layer gives it.
    "promptadmin.core.middleware.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "promptadmin.core.middleware.CSPMiddleware",  # django-csp's, with the policy built once
    # A NUL or bytes that are not UTF-8 in the path or the query: a 400 before any view.
    "promptadmin.core.middleware.UnstorableCharactersMiddleware",
    # A read-only request whose database connection was lost is answered again, once.
    "promptadmin.core.middleware.RetryLostConnectionMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Pages for signed-in people and API answers are never stored by browsers or proxies.
    "promptadmin.core.middleware.PrivateNoStoreMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    # Innermost: an exception escaping an API view or its rendering becomes a JSON 500.
    "promptadmin.api.responses.ApiServerErrorMiddleware",
    # Last, as django-axes asks: answers a locked-out sign-in with the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "promptadmin.urls"
WSGI_APPLICATION = "promptadmin.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

# Database: SQLite next to the code unless DATABASE_URL says otherwise. Connections persist
# across requests (CONN_MAX_AGE): opening one per request costs an order of magnitude in
# throughput on the hot assembly path.
DATABASE_URL = (
    env_url("DATABASE_URL", schemes=("postgres", "postgresql", "pgsql", "sqlite"))
    or f"sqlite:///{BASE_DIR / 'db.sqlite3'}"
)
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=env_int("DB_CONN_MAX_AGE", 600, minimum=0),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend, with health checks skipped for connections alive moments ago.
    DATABASES["default"]["ENGINE"] = "promptadmin.db.postgresql"
elif DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default serves requests on threads and makes summaries on a background
    # thread, so writes overlap. A transaction takes SQLite's write lock when it begins
    # (IMMEDIATE), waiting up to the timeout for another writer: a deferred one that read
    # first and then wrote failed at once with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "timeout": 20}
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Redis is optional: without it the cache is local memory and Celery runs tasks in-process.
REDIS_URL = env_url("REDIS_URL", schemes=("redis", "rediss", "unix"))
# The cache is an accelerator, never a dependency: a call to a Redis that does not answer
# gives up after REDIS_TIMEOUT seconds, and then the cache is skipped for
# CACHE_BREAKER_SECONDS (promptadmin.core.cachebreaker) before one call tries again.
REDIS_TIMEOUT = env_float("REDIS_TIMEOUT", 0.2, minimum=0.001)
CACHE_BREAKER_SECONDS = env_float("CACHE_BREAKER_SECONDS", 5.0, minimum=0)


def redis_cache(location: str) -> dict[str, object]:
    """The cache settings for a Redis at ``location`` (tests point one at a dead server)."""
    return {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": location,
        "KEY_PREFIX": "promptadmin",
        "OPTIONS": {
            # When Redis is down, reads miss and writes are dropped instead of failing.
            "IGNORE_EXCEPTIONS": True,
            "SOCKET_CONNECT_TIMEOUT": REDIS_TIMEOUT,
            "SOCKET_TIMEOUT": REDIS_TIMEOUT,
            "REDIS_CLIENT_CLASS": "promptadmin.core.cachebreaker.BreakerRedis",
            "REDIS_CLIENT_KWARGS": {"breaker_cooldown": CACHE_BREAKER_SECONDS},
            # One try per call: redis-py's default retries multiply every timeout by four.
            "CONNECTION_POOL_KWARGS": {"retry": Retry(NoBackoff(), 0)},
        },
    }


if REDIS_URL:
    CACHES = {"default": redis_cache(REDIS_URL)}
    # Ignored errors are logged, except the skips of an open breaker (which logs when it
    # opens and closes): a traceback per request would slow serving and bury the news.
    DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = True
    DJANGO_REDIS_LOGGER = "promptadmin.cache"
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not REDIS_URL)
# Without a broker (`make run`) tasks run in this process: a summary on a background thread,
# so that nothing waits for the summarizer. CELERY_TASK_ALWAYS_EAGER set explicitly (the
# test suite sets it) runs it synchronously once the request commits instead.
SUMMARIZER_IN_BACKGROUND = CELERY_TASK_ALWAYS_EAGER and "CELERY_TASK_ALWAYS_EAGER" not in os.environ
CELERY_TASK_EAGER_PROPAGATES = True
# A task is acknowledged when it has finished, and given back when its worker dies, so a
# killed worker's task runs again (tasks are idempotent: see conversations.tasks).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Redis hands an unacknowledged task to another worker after the visibility timeout; a
# task is killed at its hard time limit, which must come first, or a slow task would run
# twice at once.
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=2)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 600, minimum=1)
if CELERY_TASK_TIME_LIMIT >= CELERY_VISIBILITY_TIMEOUT:
    raise ImproperlyConfigured(
        f"CELERY_TASK_TIME_LIMIT={CELERY_TASK_TIME_LIMIT} must be below "
        f"CELERY_VISIBILITY_TIMEOUT={CELERY_VISIBILITY_TIMEOUT} (seconds)."
    )
CELERY_TASK_SOFT_TIME_LIMIT = max(1, CELERY_TASK_TIME_LIMIT - max(1, CELERY_TASK_TIME_LIMIT // 10))
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    # How often workers look for tasks whose worker died (kombu's default, a scan every
    # ~100 s, is sized for the default hour; a short timeout gets frequent sweeps).
    "unacked_restore_interval": max(1, min(10, CELERY_VISIBILITY_TIMEOUT // 4)),
    "unacked_restore_throttle": 1 if CELERY_VISIBILITY_TIMEOUT < 600 else 10,
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker running a summary renews its lease every third of SUMMARIZER_LEASE_SECONDS; a
# summary whose lease ran out belongs to a worker that is gone. Celery beat sends its task
# again every SUMMARIZER_SWEEP_SECONDS (promptadmin.conversations.tasks), so another worker
# takes it over within about the sum of the two, whatever the visibility timeout.
SUMMARIZER_LEASE_SECONDS = env_int("SUMMARIZER_LEASE_SECONDS", 30, minimum=3)
SUMMARIZER_SWEEP_SECONDS = env_int("SUMMARIZER_SWEEP_SECONDS", 15, minimum=1)
CELERY_BEAT_SCHEDULE = {
    "sweep-stuck-summaries": {
        "task": "promptadmin.conversations.tasks.sweep_stuck_summaries",
        "schedule": SUMMARIZER_SWEEP_SECONDS,
        # A sweep that no worker took in time is dropped: the next one does its work.
        "options": {"expires": SUMMARIZER_SWEEP_SECONDS},
    }
}

# Conversation summaries (promptadmin.conversations): an OpenAI-compatible endpoint when
# SUMMARIZER_BASE_URL is set, else the built-in extractive summarizer (also the fallback).
SUMMARIZER_BASE_URL = env_url("SUMMARIZER_BASE_URL", schemes=("http", "https"))
SUMMARIZER_MODEL = env_str("SUMMARIZER_MODEL", "gpt-4o-mini").strip()
SUMMARIZER_API_KEY = env_secret("SUMMARIZER_API_KEY")
if SUMMARIZER_BASE_URL and not SUMMARIZER_MODEL:
    raise ImproperlyConfigured(
        "SUMMARIZER_MODEL must not be empty when SUMMARIZER_BASE_URL is set."
    )
SUMMARIZER_TIMEOUT = env_float("SUMMARIZER_TIMEOUT", 30.0, minimum=0.1)
# Retries inside the openai client (backoff, Retry-After), then retries of the task.
SUMMARIZER_MAX_RETRIES = env_int("SUMMARIZER_MAX_RETRIES", 2, minimum=0)
SUMMARIZER_TASK_RETRIES = env_int("SUMMARIZER_TASK_RETRIES", 2, minimum=0)
SUMMARIZER_RETRY_BACKOFF = env_float("SUMMARIZER_RETRY_BACKOFF", 5.0, minimum=0)
SUMMARIZER_THRESHOLD = env_float("SUMMARIZER_THRESHOLD", 0.8, minimum=0.01, maximum=1.0)
SUMMARIZER_MAX_INPUT_TOKENS = env_int("SUMMARIZER_MAX_INPUT_TOKENS", 16000, minimum=64)
# The registered prompt whose `production` version gives the endpoint its instructions
# (component/agent[/task_type], as the Langfuse-compatible API names it); without one, the
# built-in instructions (assembler.summarize.DEFAULT_INSTRUCTIONS).
# Checked once the apps are loaded, by the one parser of prompt names (prompts.apps).
SUMMARIZER_PROMPT = env_str("SUMMARIZER_PROMPT", "conversations/summarizer").strip()
# Registered prompts' labels that only admins and admin keys set, move or remove (what a
# game fetches by default); comma-separated, empty for none. Checked like SUMMARIZER_PROMPT.
PROTECTED_PROMPT_LABELS = env_list("PROTECTED_PROMPT_LABELS", ["production"])

# Playtests (promptadmin.playtests): scenarios' prompts sent to an OpenAI-compatible chat
# completions endpoint. Without PLAYTEST_BASE_URL playtests are off (pages and endpoints say
# how to turn them on). The openai client retries 429/5xx/timeouts (Retry-After honoured).
PLAYTEST_BASE_URL = env_url("PLAYTEST_BASE_URL", schemes=("http", "https"))
PLAYTEST_MODEL = env_str("PLAYTEST_MODEL", "gpt-4o-mini").strip()
PLAYTEST_API_KEY = env_secret("PLAYTEST_API_KEY")
if PLAYTEST_BASE_URL and not PLAYTEST_MODEL:
    raise ImproperlyConfigured("PLAYTEST_MODEL must not be empty when PLAYTEST_BASE_URL is set.")
PLAYTEST_TIMEOUT = env_float("PLAYTEST_TIMEOUT", 60.0, minimum=0.1)
PLAYTEST_MAX_RETRIES = env_int("PLAYTEST_MAX_RETRIES", 2, minimum=0)
# Calls to the endpoint one run may make (replies and judgements not already cached): a run
# that would need more is refused before any call, saying how many it needs.
PLAYTEST_MAX_CALLS = env_int("PLAYTEST_MAX_CALLS", 200, minimum=1)
# Calls one run has in flight at once.
PLAYTEST_CONCURRENCY = env_int("PLAYTEST_CONCURRENCY", 4, minimum=1)

# Legacy imports (POST /api/v1/imports/, the studio's import page): the largest upload
# taken, refused with a 413 before it is read when its size is announced.
IMPORT_MAX_BYTES = env_int("IMPORT_MAX_BYTES", 200 * 1024 * 1024, minimum=1)

# Releases (promptadmin.releases.bundles): the memory each process gives the bundles it
# serves, kept by hash and shared by every release that names them; the least recently
# used go first. A bundle is one object's content (about 30 segments: some 40 KB loaded).
RELEASE_BUNDLE_MEMORY_MB = env_int("RELEASE_BUNDLE_MEMORY_MB", 256, minimum=1)

TIKTOKEN_ENCODING = env_str("TIKTOKEN_ENCODING", "cl100k_base").strip()
if not TIKTOKEN_ENCODING:
    raise ImproperlyConfigured("TIKTOKEN_ENCODING must not be empty (default: cl100k_base).")

# REST API (promptadmin.api): API keys first, so an unauthenticated call gets a 401 that
# names the scheme; sessions (with CSRF) for signed-in people.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "promptadmin.api.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["promptadmin.api.permissions.CanRead"],
    "DEFAULT_RENDERER_CLASSES": ["promptadmin.api.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["promptadmin.api.parsers.JSONParser"],
    "DEFAULT_PAGINATION_CLASS": "promptadmin.api.pagination.PageNumberPagination",
    # OPTIONS answers 405: the OpenAPI schema describes the endpoints.
    "DEFAULT_METADATA_CLASS": None,
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "drf_standardized_errors.handler.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_standardized_errors.openapi.AutoSchema",
}
# An optional request rate per API key (API_RATE_LIMIT, e.g. 600/min); off by default.
API_RATE_LIMIT = env_str("API_RATE_LIMIT").strip()
if API_RATE_LIMIT:
    if not re.fullmatch(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", API_RATE_LIMIT):
        raise ImproperlyConfigured(
            f"API_RATE_LIMIT={API_RATE_LIMIT!r} must be requests per period, e.g. 600/min "
            "(periods: s, min, hour, day)."
        )
    REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = ["promptadmin.api.throttling.ApiKeyRateThrottle"]
    REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {"api_key": API_RATE_LIMIT}
# Plain calls to assemble, fetch and render skip DRF's request cycle (promptadmin.api.hotpath);
# off, every call goes through DRF (the same answers, more CPU).
API_HOT_PATH = env_bool("API_HOT_PATH", True)

DRF_STANDARDIZED_ERRORS = {
    # No stack trace or debug page in an API response, even with DEBUG on.
    "ENABLE_IN_DEBUG_FOR_UNHANDLED_EXCEPTIONS": True,
    "EXCEPTION_HANDLER_CLASS": "promptadmin.api.errors.PromptadminExceptionHandler",
    "ERROR_SCHEMAS": {"400": "promptadmin.api.errors.ValidationErrorResponseSerializer"},
}
SPECTACULAR_SETTINGS = {
    "TITLE": "promptadmin API",
    "DESCRIPTION": "Assemble and preview prompts; manage worlds, rulesets, NPCs, entries and "
    "segments. Authenticate with `Authorization: Api-Key <key>` or a browser session.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        **{
            name: f"drf_standardized_errors.openapi_serializers.{name}.choices"
            for name in ("ValidationErrorEnum", "ClientErrorEnum", "ServerErrorEnum")
        },
        # One name for the six scopes, whichever input names them first (a stable schema).
        "SegmentInputScopeEnum": "promptadmin.content.models.SEGMENT_SCOPES",
        "DeprecatedScopeEnum": "promptadmin.content.models.DEPRECATED_SCOPES",
        "SummaryStatusEnum": "promptadmin.conversations.models.SummaryStatus",
        "ImportJobStatusEnum": "promptadmin.content.models.ImportJob.Status",
        "ImportFormatEnum": "promptadmin.content.legacy.FORMATS",
        "OutcomeReasonEnum": "assembler.result.OUTCOME_REASONS",
        "OutcomeChangeKindEnum": "assembler.result.CHANGE_KINDS",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_standardized_errors.openapi_hooks.postprocess_schema_enums",
        "drf_spectacular.hooks.postprocess_schema_enums",
    ],
    # /api/docs/ opens on the calls a game makes (its sections follow this order), then
    # what authors and tools manage; the operations are listed in the same order.
    "TAGS": [
        {"name": name, "description": description}
        for name, description in (
            ("assembly", "Assemble the prompt of a turn; preview it with every segment's fate."),
            ("prompts", "Fetch and render registered prompts; their versions and labels."),
            ("conversations", "Append messages; read the summarized history."),
            ("releases", "Releases, their labels, scenarios and impact reports."),
            ("playtests", "Send a scenario's prompt to a model and check its replies."),
            ("worlds", "Worlds."),
            ("rulesets", "Rulesets."),
            ("npcs", "NPCs."),
            ("entries", "Entries, their rulesets and cast."),
            ("segments", "Segments: the pieces prompts are assembled from."),
            ("lore", "Lore entries: what a turn's words bring into the prompt."),
            ("interfaces", "LLM backend kinds and their adapter instructions."),
            ("deprecated content", "Legacy imports and the review of deprecated segments."),
            ("auth", "Who the caller is."),
        )
    ],
    "SORT_OPERATIONS": "promptadmin.api.schema.operation_order",
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Sign-in lockout (django-axes, promptadmin.core.lockout): LOGIN_FAILURE_LIMIT wrong
# passwords for one username from one address lock that pair (the person still signs in
# from elsewhere, everyone else from the same address as usual); LOGIN_ADDRESS_FAILURE_LIMIT
# wrong passwords from one address, across usernames, lock the address. Either lasts
# LOGIN_LOCKOUT_MINUTES; an admin unlocks at once by deleting the attempts (admin: Axes >
# Access attempts, or `manage.py axes_reset`).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = env_bool("LOGIN_LOCKOUT", True)
AXES_HANDLER = "promptadmin.core.lockout.PairThenAddressHandler"
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
LOGIN_ADDRESS_FAILURE_LIMIT = env_int("LOGIN_ADDRESS_FAILURE_LIMIT", 50, minimum=1)
if LOGIN_ADDRESS_FAILURE_LIMIT < AXES_FAILURE_LIMIT:
    raise ImproperlyConfigured(
        f"LOGIN_ADDRESS_FAILURE_LIMIT={LOGIN_ADDRESS_FAILURE_LIMIT} must be at least "
        f"LOGIN_FAILURE_LIMIT={AXES_FAILURE_LIMIT}: an address is shared by many people."
    )
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]  # core.lockout's order
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
AXES_LOCKOUT_CALLABLE = "promptadmin.core.views.locked_out"
AXES_CLIENT_IP_CALLABLE = "promptadmin.core.clients.client_address"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# HTTPS. Cookies are secure whenever DEBUG is off. Behind a proxy that terminates TLS, set
# TRUST_X_FORWARDED so its X-Forwarded-Proto (and X-Forwarded-For, for sign-in lockout)
# count; never set it where clients reach the app directly, as they could forge them.
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
TRUST_X_FORWARDED = env_bool("TRUST_X_FORWARDED", False)
if TRUST_X_FORWARDED:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # the container's health check speaks plain HTTP
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
X_FRAME_OPTIONS = "DENY"

# Content-Security-Policy (django-csp): only this site's own scripts, styles and images;
# no inline script or style anywhere in the studio.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# Logs: JSON lines (one object per record, with the request id) unless LOG_FORMAT=text,
# the default in development.
LOG_FORMAT = env_str("LOG_FORMAT").strip().lower() or ("text" if DEBUG else "json")
if LOG_FORMAT not in ("json", "text"):
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r} must be json or text.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "skips": {"()": "promptadmin.core.cachebreaker.HideSkips"},
        "request_id": {"()": "promptadmin.core.logs.RequestIdFilter"},
    },
    "formatters": {
        "json": {"()": "promptadmin.core.logs.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["request_id"],
        }
    },
    "loggers": {
        "promptadmin.cache": {"filters": ["skips"]},
        # django-axes logs every sign-in at INFO; lockouts are warnings.
        "axes": {"level": "WARNING"},
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}

# Metrics (promptadmin.core.metrics) at /metrics: answered to loopback, to the addresses
# or networks in METRICS_ALLOWED_ADDRESSES, and to requests with
# "Authorization: Bearer <METRICS_TOKEN>". Under gunicorn, PROMETHEUS_MULTIPROC_DIR (read
# by prometheus_client itself) makes every worker's values add up.
METRICS_ALLOWED_ADDRESSES = env_list("METRICS_ALLOWED_ADDRESSES", [])
for _network in METRICS_ALLOWED_ADDRESSES:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"METRICS_ALLOWED_ADDRESSES={_network!r} is not an IP address or network "
            "(e.g. 10.0.0.5 or 10.0.0.0/8)."
        ) from None
METRICS_TOKEN = env_secret("METRICS_TOKEN")
PROMETHEUS_MULTIPROC_DIR = env_str("PROMETHEUS_MULTIPROC_DIR").strip()
if PROMETHEUS_MULTIPROC_DIR:
    try:
        Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ImproperlyConfigured(
            f"PROMETHEUS_MULTIPROC_DIR={PROMETHEUS_MULTIPROC_DIR!r} cannot be made: {error}"
        ) from None
if METRICS_TOKEN and len(METRICS_TOKEN) < 16:
    raise ImproperlyConfigured("METRICS_TOKEN=... must be at least 16 characters long.")
