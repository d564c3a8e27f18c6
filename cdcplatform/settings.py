"""Django settings of the CDC platform, read entirely from the environment.

Two modes, chosen by CDC_ENV:
- development (default): DEBUG on, a SECRET_KEY generated once into .devstack/secret_key, SQLite in
  .devstack/db.sqlite3, the local stack's Redis and Kafka (devstack.settings).
- production (CDC_ENV=production): SECRET_KEY and ALLOWED_HOSTS are required, DEBUG is off and may not be
  turned on, cookies are secure, HTTPS is enforced with HSTS.

Every variable is listed in docs/configuration-django.md.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from cdcplatform.env import env_bool, env_int, env_list, env_str, read_or_create_secret_key
from devstack import settings as devstack
from web.dashboard.vendor import static_dirs as vendor_static_dirs

BASE_DIR = Path(__file__).resolve().parent.parent
STATE_DIR = devstack.STATE_DIR  # .devstack/ unless DEVSTACK_HOME says otherwise

# --- Mode, secret key, debug, hosts -------------------------------------------------------------------------
CDC_ENV = env_str("CDC_ENV", "development").strip().lower()
if CDC_ENV not in {"development", "production"}:
    raise ImproperlyConfigured(f"CDC_ENV={CDC_ENV!r}: use 'development' (the default) or 'production'")
PRODUCTION = CDC_ENV == "production"

SECRET_KEY = env_str("SECRET_KEY").strip()
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. In production (CDC_ENV=production) set it to a long random value, e.g. "
            "the output of: python -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    SECRET_KEY = read_or_create_secret_key(STATE_DIR / "secret_key")

DEBUG = env_bool("DJANGO_DEBUG", default=not PRODUCTION)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DJANGO_DEBUG=1 is refused with CDC_ENV=production: DEBUG pages leak settings")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [] if PRODUCTION else ["localhost", "127.0.0.1", "[::1]"])
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS is required in production: the host names the platform is served at")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# --- Endpoints of the data plane ------------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL") or devstack.redis_url()
KAFKA_BOOTSTRAP_SERVERS = env_str("KAFKA_BOOTSTRAP_SERVERS") or devstack.kafka_bootstrap()
MONGODB_URI = env_str("MONGODB_URI") or devstack.mongodb_uri()
# Fernet key(s) encrypting connector secrets at rest (connection strings, passwords, hashing salts). A comma-separated
# list rotates keys: the first encrypts, every one decrypts. Development generates one into .devstack/encryption_key.
CDC_ENCRYPTION_KEY = env_str("CDC_ENCRYPTION_KEY").strip()
if not CDC_ENCRYPTION_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured(
            "CDC_ENCRYPTION_KEY is not set. In production (CDC_ENV=production) set it to a Fernet key, e.g. the "
            "output of: python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'"
        )
    CDC_ENCRYPTION_KEY = read_or_create_secret_key(
        STATE_DIR / "encryption_key", generate=lambda: Fernet.generate_key().decode()
    )
# How long an offset reset with stop=true waits for the running pipeline to stop (its lease to be released).
CDC_STOP_WAIT_SECONDS = float(env_int("CDC_STOP_WAIT_SECONDS", 15))
# Before a connector's configuration is saved or called valid, its source must answer within this many ms
# (web/connectors/connectivity.py); 0 turns the check off.
CDC_CONNECTIVITY_CHECK_MS = env_int("CDC_CONNECTIVITY_CHECK_MS", 5000)
# How many connection checks one user may start (DRF throttle rate syntax), and how many run at once per process.
CDC_CONNECTIVITY_CHECK_RATE = env_str("CDC_CONNECTIVITY_CHECK_RATE", "20/min")
CDC_CONNECTIVITY_CHECKS_AT_ONCE = max(1, env_int("CDC_CONNECTIVITY_CHECKS_AT_ONCE", 4))
# Timeout of Kafka calls made by the web process (reading and resetting offsets).
CDC_KAFKA_TIMEOUT_SECONDS = float(env_int("CDC_KAFKA_TIMEOUT_SECONDS", 15))
# Who reads initial-snapshot chunks (docs/snapshots.md, "Chunks as Celery tasks"): auto = Celery tasks on the
# `snapshot` queue when a worker consumes it, else threads of the pipeline's worker; celery; threads.
CDC_SNAPSHOT_DISPATCH = env_str("CDC_SNAPSHOT_DISPATCH").strip().lower() or "auto"
if CDC_SNAPSHOT_DISPATCH not in {"auto", "celery", "threads"}:
    raise ImproperlyConfigured(f"CDC_SNAPSHOT_DISPATCH={CDC_SNAPSHOT_DISPATCH!r}: use auto, celery or threads")
# A running chunk task renews a Redis heartbeat this often; after 5 missed beats the coordinator sends it again.
CDC_SNAPSHOT_CHUNK_HEARTBEAT_SECONDS = float(env_int("CDC_SNAPSHOT_CHUNK_HEARTBEAT_SECONDS", 2))
# A chunk task that has not started after this long (taken by a worker that died, or queued behind busy
# workers) is sent again; a duplicate finds the chunk's marker and writes nothing.
CDC_SNAPSHOT_CHUNK_START_SECONDS = float(env_int("CDC_SNAPSHOT_CHUNK_START_SECONDS", 60))

# Each pipeline runs in a process of its own (workers/pipeline_process.py), so pipelines use every core; off: in
# the Celery task's thread, sharing the worker's interpreter.
CDC_PIPELINE_PROCESSES = env_bool("CDC_PIPELINE_PROCESSES", True)

# --- Spark jobs (docs/spark.md, "Launching jobs") ----------------------------------------------------------------
# spark-submit's --master: local[*] runs inside the worker's machine; a spark:// or k8s:// URL runs on a cluster
# (client deploy mode: the driver stays with the worker that follows it).
SPARK_MASTER = env_str("SPARK_MASTER").strip() or "local[*]"
# Where runs write results, checkpoints and their script files unless a job names a place (admins only).
SPARK_OUTPUT_ROOT = env_str("SPARK_OUTPUT_ROOT").strip() or str(STATE_DIR / "spark")
# A batch run still going after this long is cancelled (streams run until cancelled or their own timeout_s).
SPARK_RUN_TIMEOUT_SECONDS = float(env_int("SPARK_RUN_TIMEOUT_SECONDS", 6 * 3600))
# A run whose worker has not reported for this long is marked failed by the supervisor (a killed worker).
SPARK_HEARTBEAT_TIMEOUT_SECONDS = float(env_int("SPARK_HEARTBEAT_TIMEOUT_SECONDS", 60))
# A run still queued after this long (no worker consumes the `spark` queue, or its message was lost) is marked
# failed; 0 keeps queued runs waiting forever.
SPARK_QUEUE_TIMEOUT_SECONDS = float(env_int("SPARK_QUEUE_TIMEOUT_SECONDS", 3600))
# Lines of the driver's log kept per run (the newest).
SPARK_LOG_LINES = env_int("SPARK_LOG_LINES", 2000)

# --- Applications ---------------------------------------------------------------------------------------------
INSTALLED_APPS = [
    "daphne",  # first: its runserver serves HTTP and WebSocket through asgi.py
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "rest_framework.authtoken",
    "axes",  # login lockout (web/accounts/lockout.py)
    "csp",  # Content-Security-Policy on every page (CONTENT_SECURITY_POLICY below)
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "web.accounts",
    "web.dashboard",
    "web.connectors",
    "web.sparkjobs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "web.accounts.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "web.dashboard.errors.ErrorPages",  # 403/404/500 in the site's layout, JSON under /api/ and /connect/
    "axes.middleware.AxesMiddleware",  # last, as axes requires: turns a lockout into web.accounts.lockout's answer
]
CSRF_FAILURE_VIEW = "web.dashboard.errors.csrf_failure"

ROOT_URLCONF = "cdcplatform.urls"
ASGI_APPLICATION = "cdcplatform.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "cdcplatform" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------------------------
_default_sqlite = STATE_DIR / "db.sqlite3"
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL") or f"sqlite:///{_default_sqlite}",
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the workers write concurrently: wait for locks, take the write lock up front,
    # and let readers proceed during writes (WAL).
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    if DATABASES["default"]["NAME"] == str(_default_sqlite):
        STATE_DIR.mkdir(parents=True, exist_ok=True)
    # Readable by the platform's user only (Spark jobs run as another user, docs/spark.md); SQLite gives its -wal and
    # -shm files the database file's mode.
    _sqlite_file = Path(DATABASES["default"]["NAME"])
    if _sqlite_file.is_absolute() and _sqlite_file.parent.is_dir():
        try:
            os.close(os.open(_sqlite_file, os.O_RDONLY | os.O_CREAT, 0o600))  # created private, before SQLite does
            for _private in (_sqlite_file, Path(f"{_sqlite_file}-wal"), Path(f"{_sqlite_file}-shm")):
                if _private.exists() and _private.stat().st_uid == os.geteuid():
                    _private.chmod(0o600)
        except OSError:
            pass  # not ours to change: whoever set the file up chose its mode
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Authentication -------------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Login lockout (django-axes; web/accounts/lockout.py): LOGIN_FAILURE_LIMIT failed logins for one user name from one
# address lock that pair out for LOGIN_LOCKOUT_MINUTES, on the login pages, /api/auth/token/ and /connect/'s Basic
# authentication. LOGIN_FAILURE_LIMIT=0 turns it off. An admin unlocks with `manage.py axes_reset_username <name>`.
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
AXES_ENABLED = LOGIN_FAILURE_LIMIT > 0
AXES_FAILURE_LIMIT = max(LOGIN_FAILURE_LIMIT, 1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # the lock ends LOGIN_LOCKOUT_MINUTES after the last failure
AXES_LOCKOUT_CALLABLE = "web.accounts.lockout.lockout_response"
AXES_VERBOSE = False
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out pair before the password is checked
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
# Paths the login-required middleware lets through without a session. An entry ending in "/" is a prefix,
# any other entry must match exactly. /api/ and /connect/ answer 401/403 through DRF's own permissions
# instead of redirecting to an HTML login page.
# /metrics (Prometheus) authenticates itself: a viewer's API token as a bearer token, or a session.
LOGIN_EXEMPT_PATHS = ["/login/", "/healthz", "/static/", "/api/", "/connect/", "/connect", "/metrics"]

# --- Internationalisation, static files ------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True
FORMAT_MODULE_PATH = "cdcplatform.formats"  # dates as on the dashboard, in the admin too

STATIC_URL = "/static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT") or BASE_DIR / "staticfiles")
# The dashboard's front-end libraries, served from node_modules (installed by `npm ci`; web/dashboard/vendor.py).
STATICFILES_DIRS = vendor_static_dirs()
# Serve /static/ from the ASGI application itself (Django's static files handler, finders first and then
# STATIC_ROOT). Turn off when a reverse proxy serves STATIC_ROOT after `manage.py collectstatic`.
SERVE_STATIC = env_bool("DJANGO_SERVE_STATIC", default=True)

# --- Security (production mode hardens everything; each value can still be overridden) -------------------------
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=PRODUCTION)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=PRODUCTION)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=PRODUCTION)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe liveness over plain HTTP
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=False)
_proxy_ssl_header = env_str("SECURE_PROXY_SSL_HEADER")  # e.g. HTTP_X_FORWARDED_PROTO behind a TLS proxy
SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header, "https") if _proxy_ssl_header else None
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (django-csp) on every answer: scripts, styles, images and connections from the site itself
# only, nothing inline (the dashboard's scripts and styles are files under /static/, no CDN), no plugins, no framing.
# The API docs (Swagger UI, Redoc) send their own, looser policy (web/connectors/api/docs.py), which is kept.
# 'self' in connect-src covers the dashboard's WebSocket (ws:/wss: to the same host and port).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# --- REST API -------------------------------------------------------------------------------------------------
# Token first: anonymous API callers get 401 with `WWW-Authenticate: Token`; the browser's session still works.
# Session authentication enforces CSRF on writes. Roles are checked per action (web/connectors/api/permissions.py).
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "web.accounts.tokens.HashedTokenAuthentication",  # DRF's `Token <key>`, keys stored hashed
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # JSON only: the browsable API would echo submitted passwords back into its HTML forms after a 400. The
    # browsable documentation is Swagger UI at /api/docs/.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "cdcplatform.negotiation.JsonWhateverTheAccept",
    "EXCEPTION_HANDLER": "cdcplatform.api_errors.api_exception_handler",
    # DRF's parsers, with JSON bounded in depth and refusing lone surrogates: such bodies are a 400, not a 500.
    "DEFAULT_PARSER_CLASSES": [
        "cdcplatform.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "CDC platform API",
    "DESCRIPTION": "Connectors, pipelines, offsets and Spark jobs of the MongoDB CDC platform (docs/api.md).",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,  # write-only secrets appear in request schemas only
    # Swagger UI and Redoc come from the drf-spectacular-sidecar package: no CDN needed.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Swagger UI would otherwise send the schema's URL to validator.swagger.io and show its badge.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {"SparkJobModeEnum": "web.sparkjobs.models.Mode"},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "cdcplatform.openapi.document_error_answers",  # the 4xx answers of every operation
    ],
}

# --- Channels and Celery (both on REDIS_URL) --------------------------------------------------------------------
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # Each socket's reader blocks in BZPOPMIN for up to 5 s; redis-py's default 5 s read timeout would end it (and
        # the socket) whenever Redis answers late under load. 30 s leaves room; keepalive finds a dead connection.
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30, "socket_keepalive": True}],
                   "prefix": "cdc.channels"},
    }
}
# Queues, routes and acknowledgement policy live in cdcplatform/celery.py.
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL

# --- Logging ----------------------------------------------------------------------------------------------------
LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)-7s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django": {"level": env_str("DJANGO_LOG_LEVEL", "INFO").upper(), "propagate": True},
        "django.db.backends": {"level": "INFO"},  # SQL at DEBUG only when asked for by this logger
        "axes": {"level": "WARNING"},  # each failed login and lockout, without axes' INFO chatter
        # kafka-python (the Brokers page's sizes on disk) logs every connection attempt; the page reports the outcome
        "kafka": {"level": "CRITICAL"},
    },
}
