#!/usr/bin/env bash
# One command: install what the tests need, then run every test (browser tests included).
#   bash scripts/test.sh            # all tests
#   bash scripts/test.sh -k cli     # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt

# The browser tests drive Debian's Chromium; a test tool never downloads its own browser.
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser tests..."
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  elif command -v sudo >/dev/null 2>&1; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium is missing and cannot be installed without root; browser tests will fail in CI" >&2
  fi
fi

# One pytest worker per core (pytest-xdist), each test file on one worker so a file's fixtures (an app
# server, a browser) start once; `-n 0` among the arguments runs serially.
# pytest exits 5 when no test ran: with `set -e` that fails this script, as it should.
exec python -m pytest -ra -n auto --dist loadfile "$@"
