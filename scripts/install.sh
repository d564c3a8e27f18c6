#!/usr/bin/env bash
# Installs what the platform needs on a fresh Debian machine, idempotently:
# Debian packages (Redis, JDK, Maven), Python requirements, and the Kafka / Spark / Delta Lake jars.
# A second run is a few seconds: each step is skipped when already satisfied. The first run takes minutes and says
# what it is doing, and for about how long, before each step.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .devstack
started=$(date +%s)
step() { echo "==> [$(( $(date +%s) - started ))s] $*"; }

need_apt=()
command -v redis-server >/dev/null || need_apt+=(redis-server)
command -v java >/dev/null || need_apt+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need_apt+=(maven)
# MariaDB for the MySQL/MariaDB source (devstack starts its own server; the Debian service stays stopped)
PATH="$PATH:/usr/sbin" command -v mariadbd >/dev/null || need_apt+=(mariadb-server mariadb-client)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql)
# A C compiler and the Python headers build the C extensions (scripts/build_extensions.py)
command -v gcc >/dev/null || need_apt+=(gcc)
"${CDC_BASE_PYTHON:-python3}" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))' 2>/dev/null \
  || need_apt+=(python3-dev)
if [ "${CDC_INSTALL_BROWSER:-1}" = 1 ] && [ ! -x /usr/bin/chromium ]; then need_apt+=(chromium); fi
if [ ${#need_apt[@]} -gt 0 ]; then
  step "installing Debian packages (a few minutes the first time): ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# Python packages go into a project-local virtual environment (.venv/), never the system interpreter.
# PYTHON=/path/to/python uses that interpreter as it is instead (its own venv, a conda env, ...).
if [ -z "${PYTHON:-}" ]; then
  if [ ! -x .venv/bin/python ]; then
    echo "creating the virtual environment .venv/"
    if ! "${CDC_BASE_PYTHON:-python3}" -m venv .venv 2>/dev/null; then
      rm -rf .venv
      SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
      "${CDC_BASE_PYTHON:-python3}" -m venv .venv
    fi
  fi
  PYTHON=.venv/bin/python
fi
req_hash=$(cat requirements.txt | sha256sum | cut -d' ' -f1)
req_stamp="$("$PYTHON" -c 'import sys; print(sys.prefix)')/.cdc-requirements.sha256"
if [ "$(cat "$req_stamp" 2>/dev/null)" != "$req_hash" ]; then
  step "installing Python requirements into $("$PYTHON" -c 'import sys; print(sys.prefix)')" \
    "(2 to 5 minutes the first time; pip lists each package)"
  "$PYTHON" -m pip install --disable-pip-version-check --progress-bar on -r requirements.txt \
    | { grep -v '^Requirement already satisfied' || true; }  # pipefail: pip's own failure still stops the install
  echo "$req_hash" > "$req_stamp" 2>/dev/null || true
fi

if [ -f package.json ]; then
  pkg_hash=$(cat package.json package-lock.json 2>/dev/null | sha256sum | cut -d' ' -f1)
  if [ ! -d node_modules ] || [ "$(cat .devstack/npm.sha256 2>/dev/null)" != "$pkg_hash" ]; then
    step "installing front-end packages from npm (under a minute)"
    npm ci --no-audit --no-fund --loglevel=error
    echo "$pkg_hash" > .devstack/npm.sha256
  fi
fi

# The C extensions (MongoDB documents, PostgreSQL tuples and rows, binlog rows: connectors/*/csrc/*.c), built in place;
# each skipped when built from its source already. Without them the connectors give the same results in Python, more
# slowly.
step "building the C extensions (a few seconds; nothing when already built)"
if ! "$PYTHON" scripts/build_extensions.py; then
  echo "warning: could not build connectors/mongodb/_rawjson, connectors/postgres/_pgrows or connectors/mysql/_binrows" \
    "(needs gcc and the Python" \
    "headers); those connectors use their slower Python paths" >&2
fi

# Spark jobs run as an unprivileged user of their own (sparkjobs/jobuser.py): they cannot read the platform's key
# file, database or environment. Job folders written before it existed are handed over to it. It must reach the
# Python interpreter and this checkout: a private folder on the way (pyenv under /root) lets it through (search
# only, by an ACL for that user alone).
job_user="${SPARK_JOB_USER:-cdc-spark}"
if [ "$(id -u)" = 0 ]; then
  if ! id "$job_user" >/dev/null 2>&1; then
    echo "creating the user $job_user that Spark jobs run as"
    useradd --system --create-home --home-dir "/var/lib/$job_user" --shell /usr/sbin/nologin "$job_user"
  fi
  if [ -d .devstack/spark ]; then  # job folders of the development output root, written before jobs ran as it
    find .devstack/spark -mindepth 1 -maxdepth 1 ! -name .runs ! -user "$job_user" -exec chown -R "$job_user:" {} +
  fi
  for target in "$(readlink -f "$("$PYTHON" -c 'import sys; print(sys.executable)')")" "$(pwd)/sparkjobs/run.py"; do
    folder=""
    IFS=/ read -ra parts <<< "$(dirname "${target#/}")"
    for part in "${parts[@]}"; do
      folder="$folder/$part"
      if ! runuser -u "$job_user" -- test -x "$folder"; then
        command -v setfacl >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends acl >/dev/null
        echo "letting $job_user through $folder (search only)"
        setfacl -m "u:$job_user:x" "$folder"
      fi
    done
  done
fi

step "fetching Kafka's, Spark's and Delta Lake's jars from Maven Central (1 to 3 minutes the first time; nothing later)"
"$PYTHON" -c "from devstack import kafka, spark, maven; maven.fetch_jars(kafka.POM.read_text(), kafka.JARS, 'Kafka'); spark.kafka_source_jars(); spark.delta_jars()"
# Debezium's PostgreSQL, MariaDB and MongoDB connectors and Kafka Connect, which tests/compat runs beside ours (bench.compat)
step "fetching Debezium and Kafka Connect from Maven Central (a minute the first time; nothing later)"
"$PYTHON" -m bench.compat --source postgres --fetch
"$PYTHON" -m bench.compat --source mariadb --fetch
"$PYTHON" -m bench.compat --source mongodb --fetch

# MongoDB's unified-format spec tests, from the sdist of the pymongo version requirements.txt pins (once per version)
step "fetching MongoDB's spec tests (seconds, once per pymongo version)"
"$PYTHON" -m tests.emulator.spec_source
step "installed"
